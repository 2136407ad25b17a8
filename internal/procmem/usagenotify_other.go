//go:build !linux

package procmem

import "errors"

// The mechanisms Watch reports on Linux.
const (
	NotifyThreshold = "threshold"
	NotifyEvents    = "events"
)

var errNoUsageNotifier = errors.New("memory cgroup notifications need Linux")

// UsageNotifier exists only on Linux; elsewhere the caller polls.
type UsageNotifier struct{}

// NewUsageNotifier fails: there are no memory cgroups to watch.
func NewUsageNotifier() (*UsageNotifier, error) { return nil, errNoUsageNotifier }

func (n *UsageNotifier) Watch(key, dir string, thresholds []uint64) (string, error) {
	return "", errNoUsageNotifier
}

func (n *UsageNotifier) Unwatch(key string) {}

// Events is nil: receiving from it blocks for ever, as no key fires.
func (n *UsageNotifier) Events() <-chan string { return nil }

func (n *UsageNotifier) Close() error { return nil }
