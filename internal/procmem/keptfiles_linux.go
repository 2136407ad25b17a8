package procmem

import "golang.org/x/sys/unix"

// keptFiles holds descriptors of one directory's files by name, for a
// cgroupDir: six at most, looked up in order. Unlike KeptFile, it never
// opens a file itself (its caller opens it beneath the directory, without
// following a symlink) nor opens one again after a failed read: a
// removed cgroup's file must fail, so that its directory is looked up
// afresh. Not safe for concurrent use.
type keptFiles struct {
	names []string
	fds   []int
}

// fd returns the descriptor kept for name.
func (k *keptFiles) fd(name string) (int, bool) {
	for i, n := range k.names {
		if n == name {
			return k.fds[i], true
		}
	}
	return -1, false
}

// keep keeps fd for name, which has none.
func (k *keptFiles) keep(name string, fd int) {
	k.names = append(k.names, name)
	k.fds = append(k.fds, fd)
}

// drop closes and forgets the descriptor of name, if one is kept.
func (k *keptFiles) drop(name string) {
	for i, n := range k.names {
		if n == name {
			_ = unix.Close(k.fds[i])
			last := len(k.names) - 1
			k.names[i], k.fds[i] = k.names[last], k.fds[last]
			k.names, k.fds = k.names[:last], k.fds[:last]
			return
		}
	}
}

// closeAll closes every descriptor kept.
func (k *keptFiles) closeAll() {
	for _, fd := range k.fds {
		_ = unix.Close(fd)
	}
	k.names, k.fds = nil, nil
}
