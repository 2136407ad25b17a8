package procmem

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The mechanisms Watch reports.
const (
	// NotifyThreshold is cgroup v1's: an eventfd the kernel signals when
	// memory.usage_in_bytes crosses a threshold, up or down (cgroup-v1
	// memory.rst, "Memory thresholds"), checked every 128 pages charged.
	NotifyThreshold = "threshold"
	// NotifyEvents is cgroup v2's, which has no usage thresholds: a change
	// of memory.events (high, max, oom, oom_kill; at most 100 a second) or
	// 10 % of 2 s stalled on memory (a PSI trigger on memory.pressure,
	// Documentation/accounting/psi.rst). Both say the cgroup is short of
	// memory, not that it reached a share of its limit.
	NotifyEvents = "events"
)

// pressureTrigger's window is 2 s because without CAP_SYS_RESOURCE (which
// containers, even as root, seldom have) the kernel takes only multiples
// of 2 s. It ends in a NUL as in psi.rst: /proc/pressure's files replace
// the last byte written with one.
const pressureTrigger = "some 200000 2000000\x00"

const wakeToken = 0 // the eventfd that ends the reader

// eventsBuffer is how many keys Events holds for a caller slow to receive:
// one per executor pod, as maxCgroupDirs.
const eventsBuffer = 1024

var errNotifierClosed = errors.New("usage notifier closed")

// UsageNotifier lets a sampler that sleeps between reads of memory cgroups
// wake when the kernel says one is filling up. One goroutine waits in
// epoll for the descriptors each Watch registers and sends the keys that
// fired to Events.
//
// Unlike the rest of the package it writes to cgroupfs: the kernel's API
// registers a notification by a write, to cgroup.event_control (v1) or
// memory.pressure (v2), and nothing else is ever written. Both files must
// be on a cgroup file system, so a write never lands in a regular file.
//
// Its methods are safe for concurrent use.
type UsageNotifier struct {
	epfd, wakefd int
	events       chan string
	done         chan struct{} // the reader returned
	closeOnce    sync.Once
	closeErr     error

	mu        sync.Mutex
	closed    bool
	watches   map[string][]*notifyFD
	byToken   map[uint64]*notifyFD
	lastToken uint64
	sent      []string        // sent to events, oldest first: those beyond len(events) were received
	inEvents  map[string]bool // sent and not received
	buf       []byte
}

// notifyFD is one descriptor in the epoll set. Its token, not its number,
// names it there: a number closed by Unwatch can be reused by a Watch
// before the reader handles an event that came for the old one.
type notifyFD struct {
	fd    int
	kind  notifyKind
	key   string
	token uint64
}

// notifyKind says how a descriptor is acknowledged once it fired.
type notifyKind int

const (
	thresholdCounter notifyKind = iota // an eventfd: reading its count resets it
	changedFile                        // a kernfs file: reading it from 0 rearms it
	pressureStall                      // a PSI trigger: epoll's poll consumes it
)

// NewUsageNotifier starts a notifier with nothing watched.
func NewUsageNotifier() (*UsageNotifier, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setEpollToken(&ev, wakeToken)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(wakefd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	n := &UsageNotifier{
		epfd: epfd, wakefd: wakefd,
		events: make(chan string, eventsBuffer), done: make(chan struct{}),
		watches: map[string][]*notifyFD{}, byToken: map[uint64]*notifyFD{}, inEvents: map[string]bool{},
	}
	go n.read()
	return n, nil
}

// Watch asks the kernel to say when the memory cgroup at dir (absolute: a
// v1 memory controller directory or a v2 directory) crosses each of
// thresholds, bytes of usage (v2 ignores them: see NotifyEvents), by
// sending key to Events. It replaces any earlier watch of key, even when
// it fails: a key left watched after an error would fire for the old
// thresholds. It returns NotifyThreshold or NotifyEvents; after an error
// (no such cgroup, permission, a kernel without the files) the caller polls.
func (n *UsageNotifier) Watch(key, dir string, thresholds []uint64) (mechanism string, err error) {
	n.Unwatch(key)
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("memory cgroup %q: not an absolute path", dir)
	}
	dirfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dirfd)

	var fds []*notifyFD
	switch {
	case hasFile(dirfd, "cgroup.event_control"):
		mechanism = NotifyThreshold
		fds, err = openThresholds(dirfd, thresholds)
	case hasFile(dirfd, "memory.events"):
		mechanism = NotifyEvents
		fds, err = openEventsAndPressure(dirfd)
	default:
		err = errors.New("neither cgroup.event_control (v1 memory controller) nor memory.events (v2) in it")
	}
	if err == nil {
		err = n.add(key, fds)
	}
	if err != nil {
		return "", fmt.Errorf("watching memory cgroup %s: %w", dir, err)
	}
	return mechanism, nil
}

// openThresholds registers one eventfd for every threshold: the kernel
// accepts an eventfd more than once, and closing it unregisters them all.
func openThresholds(dirfd int, thresholds []uint64) ([]*notifyFD, error) {
	if len(thresholds) == 0 {
		return nil, errors.New("no thresholds")
	}
	usage, err := openCgroupFile(dirfd, "memory.usage_in_bytes", unix.O_RDONLY, unix.CGROUP_SUPER_MAGIC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(usage)
	control, err := openCgroupFile(dirfd, "cgroup.event_control", unix.O_WRONLY, unix.CGROUP_SUPER_MAGIC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(control)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	for _, t := range thresholds {
		line := strconv.Itoa(efd) + " " + strconv.Itoa(usage) + " " + strconv.FormatUint(t, 10)
		if _, err := unix.Write(control, []byte(line)); err != nil {
			_ = unix.Close(efd)
			return nil, &fs.PathError{Op: "write", Path: "cgroup.event_control", Err: err}
		}
	}
	return []*notifyFD{{fd: efd, kind: thresholdCounter}}, nil
}

// openEventsAndPressure opens memory.events and a PSI trigger on
// memory.pressure. Without PSI (a kernel built or booted without it) it
// fails: memory.events alone fires only at memory.high or the limit, too
// late for a sampler that wants to catch the rise.
func openEventsAndPressure(dirfd int) ([]*notifyFD, error) {
	events, err := openChangedFile(dirfd, "memory.events")
	if err != nil {
		return nil, err
	}
	pressure, err := openPressureTrigger(dirfd, pressureTrigger)
	if err != nil {
		_ = unix.Close(events.fd)
		return nil, err
	}
	return []*notifyFD{events, pressure}, nil
}

// openChangedFile opens a cgroup v2 file that the kernel notifies when it
// changes and reads it once: a kernfs file polls ready until it is read
// after a change, and the read makes only later changes count.
func openChangedFile(dirfd int, name string) (*notifyFD, error) {
	fd, err := openCgroupFile(dirfd, name, unix.O_RDONLY, unix.CGROUP2_SUPER_MAGIC)
	if err != nil {
		return nil, err
	}
	if _, _, err := preadCgroup(fd, nil, 64<<10); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return &notifyFD{fd: fd, kind: changedFile}, nil
}

// openPressureTrigger registers trigger on the cgroup's memory.pressure;
// it lives as long as the descriptor.
func openPressureTrigger(dirfd int, trigger string) (*notifyFD, error) {
	fd, err := openCgroupFile(dirfd, "memory.pressure", unix.O_RDWR|unix.O_NONBLOCK, unix.CGROUP2_SUPER_MAGIC)
	if err != nil {
		return nil, err
	}
	if _, err := unix.Write(fd, []byte(trigger)); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("registering the PSI trigger %q on memory.pressure: %w", trigger[:len(trigger)-1], err)
	}
	return &notifyFD{fd: fd, kind: pressureStall}, nil
}

// openCgroupFile opens a file beneath dirfd, without following a symlink,
// and checks that it is on the cgroup file system of that magic.
func openCgroupFile(dirfd int, name string, flags int, magic int64) (int, error) {
	fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Statfs_t
	err = unix.Fstatfs(fd, &st)
	if err == nil && int64(st.Type) != magic {
		err = fmt.Errorf("not on a cgroup file system (magic %#x, want %#x)", st.Type, magic)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", name, err)
	}
	return fd, nil
}

func hasFile(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// add puts a key's descriptors in the epoll set, or closes them all.
func (n *UsageNotifier) add(key string, fds []*notifyFD) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		closeNotifyFDs(fds)
		return errNotifierClosed
	}
	n.unwatchLocked(key)
	n.watches[key] = fds
	for _, f := range fds {
		n.lastToken++
		f.key, f.token = key, n.lastToken
		n.byToken[f.token] = f
		ev := unix.EpollEvent{Events: unix.EPOLLPRI}
		if f.kind == thresholdCounter {
			ev.Events = unix.EPOLLIN
		}
		setEpollToken(&ev, f.token)
		if err := unix.EpollCtl(n.epfd, unix.EPOLL_CTL_ADD, f.fd, &ev); err != nil {
			n.unwatchLocked(key)
			return fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return nil
}

// Unwatch closes key's descriptors. Events may still hold the key, if it
// fired before.
func (n *UsageNotifier) Unwatch(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unwatchLocked(key)
}

func (n *UsageNotifier) unwatchLocked(key string) {
	fds, ok := n.watches[key]
	if !ok {
		return
	}
	for _, f := range fds {
		_ = unix.EpollCtl(n.epfd, unix.EPOLL_CTL_DEL, f.fd, nil)
		delete(n.byToken, f.token)
	}
	closeNotifyFDs(fds)
	delete(n.watches, key)
}

// Events delivers the keys that fired, in order. A key that fires again
// before it is received is there once; beyond eventsBuffer keys not
// received, more are dropped. It is closed when the notifier stops.
func (n *UsageNotifier) Events() <-chan string { return n.events }

// Close stops the goroutine and closes every descriptor. Later calls
// return what the first did.
func (n *UsageNotifier) Close() error {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		n.mu.Unlock()
		one := [8]byte{1}
		_, _ = unix.Write(n.wakefd, one[:]) // fails only when the count nears 2^64
		<-n.done
		n.mu.Lock()
		for key := range n.watches {
			n.unwatchLocked(key)
		}
		n.mu.Unlock()
		n.closeErr = errors.Join(unix.Close(n.epfd), unix.Close(n.wakefd))
	})
	return n.closeErr
}

// read waits for the kernel and acknowledges what fired, under the lock so
// that Unwatch cannot close a descriptor between the wait and the read.
func (n *UsageNotifier) read() {
	defer close(n.done)
	defer close(n.events)
	ready := make([]unix.EpollEvent, 32)
	for {
		count, err := unix.EpollWait(n.epfd, ready, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // only EINTR can come from a valid epoll descriptor
		}
		n.mu.Lock()
		for _, ev := range ready[:count] {
			token := epollToken(ev)
			if token == wakeToken {
				n.mu.Unlock()
				return
			}
			if f := n.byToken[token]; f != nil && n.acknowledge(f, ev.Events) {
				n.send(f.key)
			}
		}
		n.mu.Unlock()
	}
}

// acknowledge resets what fired and reports whether it counts as an
// event. The PSI trigger of a removed cgroup fires (POLLERR), and would
// for ever: kernfs reports an error for a removed file at every poll. It
// leaves the epoll set with that last event and stays open until Unwatch;
// so does a notifying file that fails to read.
func (n *UsageNotifier) acknowledge(f *notifyFD, events uint32) bool {
	gone := false
	switch f.kind {
	case thresholdCounter:
		var count [8]byte
		_, err := unix.Read(f.fd, count[:])
		return err == nil // EAGAIN: nothing counted since the last read
	case changedFile:
		var err error
		_, n.buf, err = preadCgroup(f.fd, n.buf, 64<<10)
		gone = err != nil
	case pressureStall:
		gone = events&(unix.EPOLLERR|unix.EPOLLHUP) != 0
	}
	if gone {
		_ = unix.EpollCtl(n.epfd, unix.EPOLL_CTL_DEL, f.fd, nil)
	}
	return true
}

// send puts key in Events unless it is there already, without blocking.
// Events has one sender, so the keys received are the first of those sent.
func (n *UsageNotifier) send(key string) {
	for received := len(n.sent) - len(n.events); received > 0; received-- {
		delete(n.inEvents, n.sent[0])
		n.sent = n.sent[1:]
	}
	if n.inEvents[key] {
		return
	}
	select {
	case n.events <- key:
		n.inEvents[key] = true
		n.sent = append(n.sent, key)
	default:
	}
}

func closeNotifyFDs(fds []*notifyFD) {
	for _, f := range fds {
		_ = unix.Close(f.fd)
	}
}

// The token fills the 64 bits of epoll_data; x/sys splits them into Fd
// and Pad.
func setEpollToken(ev *unix.EpollEvent, token uint64) {
	ev.Fd, ev.Pad = int32(uint32(token)), int32(uint32(token>>32))
}

func epollToken(ev unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}
