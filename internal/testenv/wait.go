package testenv

import (
	"net"
	"testing"
	"time"
)

// WaitFor polls cond until it holds, failing the test after timeout. The
// timeout only bounds a hang: set it generously, the machine may be busy.
// Polls start every few milliseconds and slow to every 100 ms, so a quick
// condition is seen at once and a slow one (a scrape, a rule evaluation)
// is not hammered.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := 5 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(interval)
		interval = min(2*interval, 100*time.Millisecond)
	}
}

// FreeAddr returns a loopback address (host:port) that nothing listened on
// a moment ago, for a server the test starts as another process. A server
// in the test process should listen on "127.0.0.1:0" instead.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
