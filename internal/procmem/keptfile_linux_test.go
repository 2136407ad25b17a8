package procmem

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A kept file reads what the file holds now through the descriptor it
// opened first, grows its buffer for a file larger than it, and keeps
// reading the file it opened when the path comes to name another.
func TestKeptFileKeepsItsDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := NewKeptFile(path)
	t.Cleanup(func() { _ = f.Close() })
	read := func(want string) {
		t.Helper()
		got, err := f.Read()
		if err != nil || string(got) != want {
			t.Fatalf("Read = %.40q, %v; want %.40q", got, err, want)
		}
	}
	read("one\n")
	fd := f.fd
	big := strings.Repeat("x", 10000)
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil { // same inode, truncated and rewritten
		t.Fatal(err)
	}
	read(big)
	if f.fd != fd {
		t.Fatalf("descriptor %d became %d", fd, f.fd)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read(big)
}

// A descriptor that fails is replaced by opening the path again; a path
// that cannot be opened is an error naming it, and is tried again at the
// next Read.
func TestKeptFileReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f := NewKeptFile(path)
	t.Cleanup(func() { _ = f.Close() })
	_, err := f.Read()
	var pe *os.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != path {
		t.Fatalf("Read of a missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Read(); err != nil || string(got) != "now\n" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	// The descriptor closed under it, as by a bug elsewhere: EBADF, then
	// a fresh open.
	if err := unix.Close(f.fd); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Read(); err != nil || string(got) != "again\n" {
		t.Fatalf("Read after EBADF = %q, %v", got, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got, err := f.Read(); err != nil || string(got) != "again\n" {
		t.Fatalf("Read after Close = %q, %v", got, err)
	}
}

// On procfs a pread from offset 0 of the kept descriptor is the file made
// afresh: this process's CPU time moves between two reads.
func TestKeptFileRereadsProcfs(t *testing.T) {
	f := NewKeptFile("/proc/self/stat")
	t.Cleanup(func() { _ = f.Close() })
	first, err := f.Read()
	if err != nil {
		t.Fatal(err)
	}
	s0, err := ParseSelfStat(first)
	if err != nil {
		t.Fatal(err)
	}
	fd := f.fd
	for deadline := time.Now().Add(10 * time.Second); ; {
		data, err := f.Read()
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSelfStat(data)
		if err != nil {
			t.Fatal(err)
		}
		if s.UTime+s.STime > s0.UTime+s0.STime {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stayed at %d ticks through the kept descriptor", s0.UTime+s0.STime)
		}
		for i := 0; i < 1e6; i++ { // burn CPU
			_ = bytes.Count(data, []byte{' '})
		}
	}
	if f.fd != fd {
		t.Fatalf("descriptor %d became %d", fd, f.fd)
	}
}
