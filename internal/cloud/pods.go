package cloud

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

// PodsConfig says whether and how the pods of this node are listed.
type PodsConfig struct {
	Enabled bool
	// LabelAllowlist names the pod labels kept; "*" keeps all.
	LabelAllowlist []string
	// RefreshInterval is the longest time between two lists.
	RefreshInterval time.Duration
	// MinInterval is the shortest time between two lists, however many
	// new pods are asked for (WantPod); after a failure the wait doubles
	// from there up to RefreshInterval.
	MinInterval time.Duration
}

// maxAsked bounds the set of pods asked for since the last full refresh.
const maxAsked = 1024

// PodsSnapshot is the pod list a scrape reads.
type PodsSnapshot struct {
	// Index is the last list that succeeded, nil before the first.
	Index *PodIndex
	// Success is whether the last list succeeded.
	Success bool
	// LastSuccess is when a list last succeeded, zero if never.
	LastSuccess time.Time
	// LastAttempt is when the last list ended, zero before the first.
	LastAttempt time.Time
}

// podLister keeps the list of this node's pods: one list at start, one
// every RefreshInterval, and one soon after a pod or container it does not
// know is asked for — a new executor's pod is listed within MinInterval of
// the first scrape that sees its JVM, without a watch held open on the API
// server by every node.
type podLister struct {
	cfg    PodsConfig
	list   func(ctx context.Context) ([]Pod, error)
	logger log.Logger

	snap atomic.Pointer[PodsSnapshot]
	wake chan struct{}

	mu      sync.Mutex
	asked   map[string]struct{} // uid/container asked for since the last full refresh
	failing bool
}

func newPodLister(cfg PodsConfig, list func(ctx context.Context) ([]Pod, error), logger log.Logger) *podLister {
	l := &podLister{cfg: cfg, list: list, logger: logger, wake: make(chan struct{}, 1), asked: map[string]struct{}{}}
	l.snap.Store(&PodsSnapshot{})
	return l
}

// snapshot returns the last published list; it never waits.
func (l *podLister) snapshot() PodsSnapshot { return *l.snap.Load() }

// want asks for a list soon unless the pod (and its container, when
// given) is known or was asked for since the last full refresh; it never
// waits.
func (l *podLister) want(uid, containerID string) {
	if p, ok := l.snap.Load().Index.Pod(uid); ok {
		if _, known := p.Containers[containerID]; known || containerID == "" {
			return
		}
	}
	key := uid + "/" + containerID
	l.mu.Lock()
	_, seen := l.asked[key]
	if !seen {
		if len(l.asked) >= maxAsked {
			clear(l.asked)
		}
		l.asked[key] = struct{}{}
	}
	l.mu.Unlock()
	if seen {
		return
	}
	select {
	case l.wake <- struct{}{}:
	default: // a list is already due
	}
}

func (l *podLister) run(ctx context.Context) {
	gap := l.cfg.MinInterval
	var last time.Time
	next := time.Now()
	for {
		timer := time.NewTimer(time.Until(next))
		full := false
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
			full = true
		case <-l.wake:
			timer.Stop()
			if wait := gap - time.Since(last); wait > 0 && !sleepCtx(ctx, wait) {
				return
			}
		}
		if full {
			// Pods still unknown may be asked for again.
			l.mu.Lock()
			clear(l.asked)
			l.mu.Unlock()
		}
		err := l.refresh(ctx)
		if ctx.Err() != nil {
			return
		}
		last = time.Now()
		if err != nil {
			gap = min(max(2*gap, l.cfg.MinInterval), l.cfg.RefreshInterval)
			next = last.Add(gap)
		} else {
			gap = l.cfg.MinInterval
			next = last.Add(l.cfg.RefreshInterval)
		}
	}
}

// refresh lists the pods once and publishes the result; a failure keeps
// the last good list.
func (l *podLister) refresh(ctx context.Context) error {
	pods, err := l.list(ctx)
	prev := l.snap.Load()
	next := &PodsSnapshot{Index: prev.Index, LastSuccess: prev.LastSuccess, Success: err == nil, LastAttempt: time.Now()}
	if err == nil {
		next.Index, next.LastSuccess = NewPodIndex(pods), time.Now()
	}
	l.snap.Store(next)

	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil && !l.failing && ctx.Err() == nil:
		hint := ""
		var se *httpget.StatusError
		if errors.As(err, &se) && se.Code == 403 {
			hint = "the exporter's ClusterRole needs list on pods"
		}
		level.Warn(l.logger).Log("msg", "Listing this node's pods failing; namespace, pod and container labels keep their last values", "err", err, "hint", hint)
		l.failing = true
	case err == nil && l.failing:
		level.Info(l.logger).Log("msg", "Listing this node's pods recovered", "pods", len(pods))
		l.failing = false
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// PodsEnabled says whether this node's pods are listed.
func (r *Refresher) PodsEnabled() bool { return r.pods != nil }

// Pods returns the last list of this node's pods; the zero PodsSnapshot
// when pods are not listed. It never waits for the network.
func (r *Refresher) Pods() PodsSnapshot {
	if r.pods == nil {
		return PodsSnapshot{}
	}
	return r.pods.snapshot()
}

// WantPod says a process runs in pod uid (and container containerID, the
// runtime's id without scheme, when known): if the list does not have it,
// the pods are listed again soon, in the background.
func (r *Refresher) WantPod(uid, containerID string) {
	if r.pods != nil && uid != "" {
		r.pods.want(uid, containerID)
	}
}
