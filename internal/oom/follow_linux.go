package oom

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// recordBufSize holds the longest /dev/kmsg record (CONSOLE_EXT_LOG_MAX):
// a read() into a smaller buffer fails with EINVAL.
const recordBufSize = 8192

// FollowConfig says what to follow and how patiently.
type FollowConfig struct {
	Path string
	// PollInterval is how long to wait at the end of a regular file or an
	// idle FIFO before reading again. /dev/kmsg needs none: reads block.
	PollInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait before reopening after an
	// error; it doubles on each consecutive failure.
	MinBackoff, MaxBackoff time.Duration
}

// Follower reads kernel log records from the end of Path as they come:
// /dev/kmsg (a character device, one record per read), or a regular file or
// FIFO of one record per line (tests, replays). It never reads what was
// logged before it started, reopens after errors with backoff, and never
// spins.
type Follower struct {
	cfg      FollowConfig
	onRecord func([]byte)
	onError  func(error)

	open func() (source, error)

	mu   sync.Mutex
	file io.Closer // the open log, closed by Stop to unblock a read
	err  error     // the last open or read error; nil while reading fine

	stop chan struct{}
	done chan struct{}
}

// Follow starts following in the background. onRecord gets every record
// (its slice is reused after it returns); onError gets every open or read
// error, so the caller can log it (once) and report it.
func Follow(cfg FollowConfig, onRecord func([]byte), onError func(error)) *Follower {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(cfg.MinBackoff, time.Minute)
	}
	return follow(cfg, func() (source, error) { return openLog(cfg.Path) }, onRecord, onError)
}

// follow is Follow reading from what open returns, so tests can stand in
// for the kernel (a ring buffer overrun cannot be caused at will).
func follow(cfg FollowConfig, open func() (source, error), onRecord func([]byte), onError func(error)) *Follower {
	f := &Follower{cfg: cfg, open: open, onRecord: onRecord, onError: onError, stop: make(chan struct{}), done: make(chan struct{})}
	go f.loop()
	return f
}

// source is an open kernel log, positioned at its end.
type source struct {
	r io.ReadCloser
	// records: one record per read (/dev/kmsg); otherwise one per line.
	records bool
}

// Err is the last open or read error, nil while records are being read.
func (f *Follower) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Stop ends following and waits for it.
func (f *Follower) Stop() {
	f.mu.Lock()
	select {
	case <-f.stop:
	default:
		close(f.stop)
		if f.file != nil {
			_ = f.file.Close() // unblocks a pending read; read-only, nothing to lose
		}
	}
	f.mu.Unlock()
	<-f.done
}

func (f *Follower) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
	if err != nil && f.onError != nil {
		f.onError(err)
	}
}

func (f *Follower) loop() {
	defer close(f.done)
	backoff := f.cfg.MinBackoff
	for {
		err := f.followOnce()
		if f.stopped() {
			return
		}
		if err == nil {
			backoff = f.cfg.MinBackoff
			continue
		}
		f.setErr(err)
		if !f.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, f.cfg.MaxBackoff)
	}
}

func (f *Follower) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// sleep waits d or until Stop; it reports whether to go on.
func (f *Follower) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.stop:
		return false
	case <-t.C:
		return true
	}
}

// followOnce opens the log and reads until an error.
func (f *Follower) followOnce() error {
	src, err := f.open()
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.stopped() {
		f.mu.Unlock()
		_ = src.r.Close()
		return nil
	}
	f.file = src.r
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.file = nil
		f.mu.Unlock()
		_ = src.r.Close()
	}()
	// Open and at the end: reading works again even if the log stays
	// quiet for hours.
	f.clearErr()
	if src.records {
		return f.readRecords(src.r)
	}
	return f.readLines(src.r)
}

// openLog opens path at its end.
func openLog(path string) (source, error) {
	// O_NONBLOCK: opening a FIFO does not wait for a writer, and Go's
	// poller then waits for data on the device or FIFO, so Close (Stop)
	// interrupts a read. O_NOFOLLOW: the path is used as given, never a
	// symlink planted in its place.
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return source{}, fmt.Errorf("open kernel log: %w", err)
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return source{}, fmt.Errorf("stat kernel log: %w", err)
	}
	// Only what is logged from now on: on /dev/kmsg SEEK_END skips the
	// ring buffer's history, on a file its present content. A FIFO cannot
	// seek and has no history.
	if info.Mode()&os.ModeNamedPipe == 0 {
		if _, err := file.Seek(0, io.SeekEnd); err != nil {
			file.Close()
			return source{}, fmt.Errorf("seek to the end of the kernel log: %w", err)
		}
	}
	return source{r: file, records: info.Mode()&os.ModeCharDevice != 0}, nil
}

// readRecords reads /dev/kmsg: each read returns exactly one record.
func (f *Follower) readRecords(r io.Reader) error {
	buf := make([]byte, recordBufSize)
	for {
		n, err := r.Read(buf)
		switch {
		case err == nil:
			f.clearErr()
			f.onRecord(buf[:n])
		case errors.Is(err, syscall.EPIPE):
			// The ring buffer overwrote records we had not read yet; the
			// next read returns the oldest one still there. Lost kills are
			// still counted by vmstat and the cgroups.
			continue
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			// Only if the poller could not take the device: wait, never spin.
			if !f.sleep(f.cfg.PollInterval) {
				return nil
			}
		default:
			if f.stopped() {
				return nil
			}
			return fmt.Errorf("read kernel log: %w", err)
		}
	}
}

// readLines reads a regular file or FIFO of one record per line, waiting
// PollInterval at its end for more.
func (f *Follower) readLines(file io.Reader) error {
	r := bufio.NewReaderSize(file, recordBufSize)
	var partial []byte
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case err == nil:
			f.clearErr()
			if len(partial) > 0 {
				chunk = append(partial, chunk...)
				partial = partial[:0]
			}
			f.onRecord(chunk)
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than any kernel record: drop it, keep in step.
			partial = partial[:0]
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
		case errors.Is(err, io.EOF):
			// A line being written is kept until its newline comes.
			if len(partial)+len(chunk) <= recordBufSize {
				partial = append(partial, chunk...)
			} else {
				partial = partial[:0]
			}
			if !f.sleep(f.cfg.PollInterval) {
				return nil
			}
		default:
			if f.stopped() {
				return nil
			}
			return fmt.Errorf("read kernel log: %w", err)
		}
	}
}

func (f *Follower) clearErr() {
	f.mu.Lock()
	f.err = nil
	f.mu.Unlock()
}
