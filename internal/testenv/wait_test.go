package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(t, time.Minute, "the third poll", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("polled %d times, want 3 (it stops once the condition holds)", n)
	}
}

// fatalRecorder is a testing.TB whose Fatalf ends the goroutine, as
// testing's does, and keeps the message.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitForFailsAtTheTimeout(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitFor(rec, 20*time.Millisecond, "something that never happens", func() bool { return false })
	}()
	<-done
	if !strings.Contains(rec.msg, "timed out after 20ms waiting for something that never happens") {
		t.Errorf("Fatalf message = %q", rec.msg)
	}
}
