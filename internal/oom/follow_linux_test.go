package oom

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// collected gathers what a Follower delivers.
type collected struct {
	mu      sync.Mutex
	records []string
	errs    []error
}

func (c *collected) record(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, string(b))
}

func (c *collected) err(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

func (c *collected) snapshot() ([]string, []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.records...), append([]error(nil), c.errs...)
}

// waitTimeout bounds a hang; the machine may be busy.
const waitTimeout = 30 * time.Second

func fastConfig(path string) FollowConfig {
	return FollowConfig{Path: path, PollInterval: 10 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
}

func TestFollowRegularFileStartsAtItsEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(path, []byte("6,1,1,-;history before the start\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var c collected
	f := Follow(fastConfig(path), c.record, c.err)
	defer f.Stop()
	// The follower has seeked to the end once it is reading; until then a
	// write could land before its seek. Err is nil both before and after,
	// so wait on a marker line instead.
	w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	testenv.WaitFor(t, waitTimeout, "the follower to see a marker", func() bool {
		fmt.Fprintln(w, "6,2,2,-;marker")
		recs, _ := c.snapshot()
		return len(recs) > 0
	})
	// A record written in two pieces arrives once, whole.
	fmt.Fprint(w, "3,3,3,-;Out of memory: Killed process 42 (ja")
	time.Sleep(50 * time.Millisecond)
	fmt.Fprint(w, "va) total-vm:1kB\n")
	testenv.WaitFor(t, waitTimeout, "the kill record", func() bool {
		recs, _ := c.snapshot()
		return strings.Contains(strings.Join(recs, ""), "Killed process 42")
	})
	recs, errs := c.snapshot()
	for _, r := range recs {
		if strings.Contains(r, "history") {
			t.Errorf("delivered a record written before the start: %q", r)
		}
		if strings.Contains(r, "Killed process 42") && r != "3,3,3,-;Out of memory: Killed process 42 (java) total-vm:1kB\n" {
			t.Errorf("split record delivered as %q", r)
		}
	}
	if len(errs) > 0 {
		t.Errorf("errors: %v", errs)
	}
}

func TestFollowFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		testenv.Unavailable(t, "mkfifo: %v", err)
	}
	var c collected
	f := Follow(fastConfig(path), c.record, c.err)
	defer f.Stop()
	for writer := 0; writer < 2; writer++ { // a writer may come and go
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "Memory cgroup out of memory: Killed process %d (java) total-vm:1kB\n", 100+writer)
		w.Close()
		want := fmt.Sprintf("Killed process %d", 100+writer)
		testenv.WaitFor(t, waitTimeout, want, func() bool {
			recs, _ := c.snapshot()
			return strings.Contains(strings.Join(recs, ""), want)
		})
	}
	if _, errs := c.snapshot(); len(errs) > 0 {
		t.Errorf("errors: %v", errs)
	}
}

func TestFollowMissingPathReportsAndRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not-yet")
	var c collected
	f := Follow(fastConfig(path), c.record, c.err)
	defer f.Stop()
	testenv.WaitFor(t, waitTimeout, "an open error", func() bool { return f.Err() != nil })
	if err := f.Err(); !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Err = %v, want not-exist", err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Recovered as soon as it is open, before any record: a quiet log is
	// not a broken one.
	testenv.WaitFor(t, waitTimeout, "the error to clear once the file exists", func() bool { return f.Err() == nil })
	w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	testenv.WaitFor(t, waitTimeout, "records after the file appeared", func() bool {
		fmt.Fprintln(w, "6,1,1,-;hello")
		recs, _ := c.snapshot()
		return len(recs) > 0 && f.Err() == nil
	})
	// Backing off, not spinning: with 10-50 ms backoff a missing file is
	// retried a handful of times, not thousands.
	_, errs := c.snapshot()
	if len(errs) > 1000 {
		t.Errorf("%d open errors: the follower spins", len(errs))
	}
}

func TestFollowRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	var c collected
	f := Follow(fastConfig(link), c.record, c.err)
	defer f.Stop()
	testenv.WaitFor(t, waitTimeout, "the symlink to be refused", func() bool { return f.Err() != nil })
	if !strings.Contains(f.Err().Error(), "too many levels of symbolic links") {
		t.Errorf("Err = %v, want ELOOP", f.Err())
	}
}

// TestFollowDevKmsg follows the real kernel log: a marker written to
// /dev/kmsg (as root may) comes back as one record, and nothing from
// before the start does.
func TestFollowDevKmsg(t *testing.T) {
	testenv.RequireRoot(t) // to read and write /dev/kmsg
	var c collected
	f := Follow(FollowConfig{Path: "/dev/kmsg"}, c.record, c.err)
	stopped := false
	defer func() {
		if !stopped {
			f.Stop()
		}
	}()
	marker := fmt.Sprintf("executor_exporter oom follow test %d", time.Now().UnixNano())
	w, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	testenv.WaitFor(t, waitTimeout, "the marker to come back from /dev/kmsg", func() bool {
		// printk_devkmsg=ratelimit allows bursts of a few writes; one per
		// 100 ms stays well inside it.
		fmt.Fprintln(w, marker)
		time.Sleep(100 * time.Millisecond)
		recs, _ := c.snapshot()
		for _, r := range recs {
			if strings.Contains(r, marker) {
				if string(Message([]byte(r))) != marker {
					t.Errorf("Message(%q) = %q, want the marker", r, Message([]byte(r)))
				}
				return true
			}
		}
		return false
	})
	recs, errs := c.snapshot()
	if len(recs) > 200 {
		t.Errorf("%d records: the follower read the history instead of starting at the end", len(recs))
	}
	if len(errs) > 0 {
		t.Errorf("errors: %v", errs)
	}
	// Stop must return while a read is blocked on the device.
	done := make(chan struct{})
	go func() { f.Stop(); close(done) }()
	select {
	case <-done:
		stopped = true
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return while blocked reading /dev/kmsg")
	}
}

// kmsgStandIn plays /dev/kmsg: each Read returns the next scripted record
// or error, then blocks until Close, as the device does when no record is
// pending.
type kmsgStandIn struct {
	mu     sync.Mutex
	script []any // string: a record; error: a failed read
	closed chan struct{}
	once   sync.Once
}

func (k *kmsgStandIn) Read(p []byte) (int, error) {
	k.mu.Lock()
	if len(k.script) > 0 {
		next := k.script[0]
		k.script = k.script[1:]
		k.mu.Unlock()
		if err, ok := next.(error); ok {
			return 0, err
		}
		return copy(p, next.(string)), nil
	}
	k.mu.Unlock()
	<-k.closed
	return 0, os.ErrClosed
}

func (k *kmsgStandIn) Close() error {
	k.once.Do(func() { close(k.closed) })
	return nil
}

// TestFollowRecordsReadsOnAfterTransientErrors: EPIPE (the ring buffer
// overwrote records not yet read; the next read returns the oldest one
// left), EINTR and EAGAIN are not failures. The record after them
// arrives, no error is reported, and the log is not reopened (a reopen
// seeks to the end and would lose the records still in the buffer).
func TestFollowRecordsReadsOnAfterTransientErrors(t *testing.T) {
	const kill = "3,10,10,-;Memory cgroup out of memory: Killed process 42 (java)"
	for _, errno := range []syscall.Errno{syscall.EPIPE, syscall.EINTR, syscall.EAGAIN} {
		t.Run(errno.Error(), func(t *testing.T) {
			dev := &kmsgStandIn{closed: make(chan struct{}), script: []any{
				&os.PathError{Op: "read", Path: "/dev/kmsg", Err: errno}, // as os.File reports it
				kill,
			}}
			var opens atomic.Int32
			open := func() (source, error) {
				opens.Add(1)
				return source{r: dev, records: true}, nil
			}
			var c collected
			f := follow(fastConfig("/dev/kmsg"), open, c.record, c.err)
			testenv.WaitFor(t, waitTimeout, "the record after "+errno.Error(), func() bool {
				recs, _ := c.snapshot()
				return len(recs) > 0
			})
			f.Stop()
			recs, errs := c.snapshot()
			if len(recs) != 1 || recs[0] != kill {
				t.Errorf("records = %q, want the kill record once", recs)
			}
			if len(errs) > 0 || f.Err() != nil {
				t.Errorf("errors reported: %v (Err %v); want none", errs, f.Err())
			}
			if n := opens.Load(); n != 1 {
				t.Errorf("opened the log %d times, want once", n)
			}
		})
	}
}
