package yarn

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/go-kit/log/level"
)

// pollLoop reads the container list and the node info at once, then every
// Interval, or HurryInterval while hurried; Hurry wakes it early.
func (s *Source) pollLoop(ctx context.Context) {
	defer s.wg.Done()
	infoEvery := 10 // node info changes only when the NodeManager restarts
	for n := 0; ; n++ {
		s.pollContainers(ctx, time.Now())
		if n%infoEvery == 0 || !s.Node().Reachable {
			s.pollNodeInfo(ctx)
		}
		s.mu.Lock()
		wait := s.cfg.Interval
		if s.hurrying(time.Now()) {
			wait = s.cfg.HurryInterval
		}
		s.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.wake:
			t.Stop()
		}
	}
}

func (s *Source) pollContainers(ctx context.Context, now time.Time) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	data, err := get(rctx, s.client, joinURL(s.cfg.NodeManagerURL, "/ws/v1/node/containers"))
	var list []APIContainer
	if err == nil {
		if list, err = ParseContainers(data); err != nil {
			err = parseError(err)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return // stopping
		}
		s.countError(TargetNodeManager, err)
		s.mu.Lock()
		wasUp := s.node.Reachable || s.node.LastSuccess.IsZero()
		s.node.Reachable, s.node.Err = false, err.Error()
		s.mu.Unlock()
		if wasUp {
			level.Warn(s.logger).Log("msg", "cannot list the NodeManager's containers", "kind", KindOf(err), "err", err)
		}
		s.expire(now)
		return
	}
	var newApps []string
	s.mu.Lock()
	seen := make(map[string]bool, len(list))
	for _, a := range list {
		seen[a.ID] = true
		c, ok := s.containers[a.ID]
		if !ok {
			c = &Container{ID: a.ID, FirstSeen: now}
			c.AppID, _ = AppIDOf(a.ID)
			s.containers[a.ID] = c
			if _, known := s.apps[c.AppID]; !known {
				newApps = append(newApps, c.AppID)
			}
		}
		c.State, c.User, c.ExecutionType = a.State, a.User, a.ExecutionType
		c.Allocation = uint64(a.TotalMemoryNeededMB) * MiB
		c.VmemLimit = uint64(float64(c.Allocation) * s.node.VmemRatio)
		c.ExitCode = a.ExitCode
		if a.Diagnostics != c.fullDiagnostics {
			// The kill they name may be anywhere in them; their end (the
			// last entries) is what is kept to show.
			c.Kill = ParseDiagnostics(a.Diagnostics)
			c.Diagnostics, c.fullDiagnostics = tail(a.Diagnostics, MaxDiagnosticsBytes), a.Diagnostics
		}
		c.LastSeen, c.Gone = now, false
	}
	for id, c := range s.containers {
		if !seen[id] {
			c.Gone = true
		}
	}
	if !s.node.Reachable && !s.node.LastSuccess.IsZero() {
		level.Info(s.logger).Log("msg", "NodeManager reachable again", "url", s.cfg.NodeManagerURL)
	}
	s.node.Reachable, s.node.LastSuccess, s.node.Err = true, now, ""
	s.mu.Unlock()
	for _, app := range newApps {
		s.queueLookup(app)
	}
	s.expire(now)
}

// tail is the last max bytes of s, from a line's start where one is near.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 256 {
		s = s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

// expire forgets containers gone for longer than Retention.
func (s *Source) expire(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.containers {
		if c.Gone && now.Sub(c.LastSeen) > s.cfg.Retention {
			delete(s.containers, id)
		}
	}
}

func (s *Source) pollNodeInfo(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	data, err := get(rctx, s.client, joinURL(s.cfg.NodeManagerURL, "/ws/v1/node/info"))
	var info NodeInfo
	if err == nil {
		if info, err = ParseNodeInfo(data); err != nil {
			err = parseError(err)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			s.countError(TargetNodeManager, err)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.node.settings(s.cfg.Conf, info)
}

// lookupLoop asks the ResourceManagers for application names, one at a
// time, each application once (a failure again after appRetry).
func (s *Source) lookupLoop(ctx context.Context) {
	defer s.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case app := <-s.lookups:
			s.lookup(ctx, app)
		}
	}
}

func (s *Source) lookup(ctx context.Context, appID string) {
	now := time.Now()
	s.mu.Lock()
	e, ok := s.apps[appID]
	if ok && (e.found || now.Before(e.retryAt)) {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	var app App
	err := errNoRM
	for _, base := range s.cfg.ResourceManagerURLs {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		var data []byte
		data, err = get(rctx, s.client, joinURL(base, "/ws/v1/cluster/apps/"+url.PathEscape(appID)))
		cancel()
		if err == nil {
			if app, err = ParseApp(data); err != nil {
				err = parseError(err)
			} else if app.ID != appID {
				err = parseError(errors.New("answer for another application " + app.ID))
			}
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		s.countError(TargetResourceManager, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		e = &appEntry{}
		s.apps[appID] = e
		s.appOrder = append(s.appOrder, appID)
		for len(s.appOrder) > s.cfg.MaxApps {
			delete(s.apps, s.appOrder[0])
			s.appOrder = s.appOrder[1:]
		}
	}
	if err != nil {
		e.retryAt = now.Add(appRetry)
		level.Debug(s.logger).Log("msg", "cannot read the application's name", "app_id", appID, "err", err)
		return
	}
	e.name, e.found = app.Name, true
}
