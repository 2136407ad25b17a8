package yarn_test

import (
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/yarn"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

const (
	cid1 = "container_1700000000000_0042_01_000002"
	cid2 = "container_1700000000000_0042_01_000003"
	app1 = "application_1700000000000_0042"
)

func startSource(t *testing.T, srv *yarntest.Server, cfg yarn.Config) *yarn.Source {
	t.Helper()
	cfg.NodeManagerURL = srv.URL
	if cfg.ResourceManagerURLs == nil {
		cfg.ResourceManagerURLs = []string{srv.URL}
	}
	if cfg.Interval == 0 {
		cfg.Interval = 50 * time.Millisecond
	}
	s := yarn.NewSource(cfg, log.NewNopLogger())
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

func errorCount(s *yarn.Source, target, kind string) uint64 {
	for _, e := range s.Errors() {
		if e.Target == target && e.Kind == kind {
			return e.Count
		}
	}
	return 0
}

func TestSourceContainersAndNames(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.AddApp(app1, "nightly-sessionize", "hadoop")
	srv.Launch(cid1, 5632)
	srv.Linger = 100 * time.Millisecond
	s := startSource(t, srv, yarn.Config{Retention: time.Hour}) // YARN's defaults

	testenv.WaitFor(t, 10*time.Second, "the container listed", func() bool { _, ok := s.Container(cid1); return ok })
	c, _ := s.Container(cid1)
	if c.Allocation != 5632<<20 || c.VmemLimit != 12401718067 || c.AppID != app1 || c.State != "RUNNING" || c.Finished() {
		t.Errorf("container %+v", c)
	}
	if a, ok := s.Allocation(cid1); !ok || a != 5632<<20 {
		t.Errorf("Allocation = %d, %v", a, ok)
	}
	if _, ok := s.Allocation(cid2); ok {
		t.Error("an allocation for a container not listed")
	}
	testenv.WaitFor(t, 10*time.Second, "the application's name", func() bool { n, ok := s.AppName(app1); return ok && n == "nightly-sessionize" })
	testenv.WaitFor(t, 10*time.Second, "the node info", func() bool { return s.Node().Version != "" })
	// Apache 3.3.6 on YARN's defaults: strict enforcement without memory
	// cgroups, no YARN-11967; the checks are on and nothing runs them.
	if n := s.Node(); !n.Reachable || n.Version != "3.3.6" || !n.PmemCheck || n.VmemRatio != 2.1 || !n.MonitorEnabled ||
		n.Enforcement.Rule != yarn.Rule33 || n.Enforcement.Enforcer() != "none" || n.Enforcement.Why != yarn.WhyStrictNoCgroup {
		t.Errorf("node %+v", n)
	}

	// A second container of the same application: the ResourceManager is
	// not asked again.
	srv.Launch(cid2, 1024)
	testenv.WaitFor(t, 10*time.Second, "the second container", func() bool { _, ok := s.Container(cid2); return ok })
	polls := srv.Requests("/ws/v1/node/containers")
	testenv.WaitFor(t, 10*time.Second, "more polls", func() bool { return srv.Requests("/ws/v1/node/containers") > polls+3 })
	if n := srv.Requests("/ws/v1/cluster/apps/"); n != 1 {
		t.Errorf("ResourceManager asked %d times for one application, want 1", n)
	}

	// The NodeManager lists the finished container for Linger only; the
	// Source keeps its exit status after that.
	srv.Finish(cid1, yarn.ExitKilledPmem, "Container [pid=5,containerID="+cid1+"] is running 1B beyond the 'PHYSICAL' memory limit. Current usage: 5.5 GB of 5.5 GB physical memory used; 6 GB of 11.6 GB virtual memory used. Killing container.")
	testenv.WaitFor(t, 10*time.Second, "the NodeManager to drop it", func() bool { return !srv.Listed(cid1) })
	testenv.WaitFor(t, 10*time.Second, "the Source to see it gone", func() bool { c, _ := s.Container(cid1); return c.Gone })
	c, ok := s.Container(cid1)
	if !ok || c.ExitCode != yarn.ExitKilledPmem || c.Kill.Kind != yarn.KillPmem || c.State != yarn.StateDone || !c.Finished() {
		t.Errorf("finished container after the NodeManager dropped it: %+v, %v", c, ok)
	}
}

func TestSourceRetentionAndUnknownApp(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.Linger = 0
	srv.Launch(cid1, 1024)
	s := startSource(t, srv, yarn.Config{Retention: 200 * time.Millisecond})
	testenv.WaitFor(t, 10*time.Second, "the container listed", func() bool { _, ok := s.Container(cid1); return ok })
	srv.Finish(cid1, 0, "")
	testenv.WaitFor(t, 10*time.Second, "the container forgotten after Retention", func() bool { _, ok := s.Container(cid1); return !ok })
	// The ResourceManager does not know the application: a 404, counted,
	// and no name.
	testenv.WaitFor(t, 10*time.Second, "the 404 counted", func() bool { return errorCount(s, yarn.TargetResourceManager, "http_404") > 0 })
	if _, ok := s.AppName(app1); ok {
		t.Error("a name for an unknown application")
	}
}

// TestSourceIdle: an idle NodeManager is up with no containers, whichever
// of its three answers it gives.
func TestSourceIdle(t *testing.T) {
	for _, form := range []string{yarntest.IdleNull, yarntest.IdleEmpty, yarntest.IdleJersey2} {
		srv := yarntest.NewServer()
		srv.SetIdle(form)
		s := startSource(t, srv, yarn.Config{Interval: 20 * time.Millisecond})
		testenv.WaitFor(t, 10*time.Second, "three polls", func() bool { return srv.Requests("/ws/v1/node/containers") >= 3 })
		if n := s.Node(); !n.Reachable || len(s.Containers()) != 0 || errorCount(s, yarn.TargetNodeManager, yarn.ErrParse) != 0 {
			t.Errorf("%s: reachable %v, %d containers, %v parse errors", form, n.Reachable, len(s.Containers()), errorCount(s, yarn.TargetNodeManager, yarn.ErrParse))
		}
		s.Stop()
		srv.Close()
	}
}

func TestSourceHurry(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	s := startSource(t, srv, yarn.Config{Interval: time.Hour, HurryInterval: 20 * time.Millisecond})
	testenv.WaitFor(t, 10*time.Second, "the first poll", func() bool { return s.Node().Reachable })
	first := srv.Requests("/ws/v1/node/containers")
	s.Hurry(time.Now().Add(time.Hour))
	// With an hour between slow polls, only hurried polls can get here.
	testenv.WaitFor(t, 10*time.Second, "hurried polls", func() bool { return srv.Requests("/ws/v1/node/containers") >= first+5 })
}

func TestSourceFailures(t *testing.T) {
	for _, tc := range []struct {
		mode, kind string
	}{
		{yarntest.ModeForbidden, "http_403"},
		{yarntest.ModeHang, yarn.ErrTimeout},
		{yarntest.ModeGarbage, yarn.ErrTooLarge},
		{yarntest.ModeKerberos, yarn.ErrKerberosKind},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := yarntest.NewServer()
			defer srv.Close()
			srv.SetMode(tc.mode)
			// A short timeout for the hang; the others get time to read
			// the 4 MiB a too-large answer is cut at on a loaded machine.
			timeout := 5 * time.Second
			if tc.mode == yarntest.ModeHang {
				timeout = 300 * time.Millisecond
			}
			s := startSource(t, srv, yarn.Config{Timeout: timeout})
			testenv.WaitFor(t, 20*time.Second, "the failure counted as "+tc.kind, func() bool {
				return errorCount(s, yarn.TargetNodeManager, tc.kind) >= 2
			})
			if n := s.Node(); n.Reachable || n.Err == "" {
				t.Errorf("node %+v", n)
			}
			// Recovery.
			srv.SetMode(yarntest.ModeOK)
			testenv.WaitFor(t, 20*time.Second, "the NodeManager reachable again", func() bool { return s.Node().Reachable })
		})
	}
	t.Run("down", func(t *testing.T) {
		srv := yarntest.NewServer()
		srv.Close()
		s := startSource(t, srv, yarn.Config{Timeout: 300 * time.Millisecond})
		testenv.WaitFor(t, 20*time.Second, "the failure counted as down", func() bool { return errorCount(s, yarn.TargetNodeManager, yarn.ErrDown) >= 2 })
	})
}

// A hanging NodeManager must not hold a caller: every read returns while
// a request waits for its timeout.
func TestSourceNeverBlocks(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.SetMode(yarntest.ModeHang)
	s := startSource(t, srv, yarn.Config{Timeout: time.Hour})
	testenv.WaitFor(t, 10*time.Second, "a request hanging", func() bool { return srv.Requests("/ws/v1/node/containers") > 0 })
	done := make(chan struct{})
	go func() {
		s.Node()
		s.Container(cid1)
		s.AppName(app1)
		s.Errors()
		s.Containers()
		s.Hurry(time.Now().Add(time.Minute))
		close(done)
	}()
	testenv.WaitFor(t, 10*time.Second, "the reads to return during a hung request", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}

func TestSourceKerberosConf(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	s := startSource(t, srv, yarn.Config{Conf: yarn.Conf{AuthType: "kerberos", VmemRatio: 2.1}})
	if n := s.Node(); n.Err == "" || errorCount(s, yarn.TargetNodeManager, yarn.ErrKerberosKind) != 1 {
		t.Errorf("node %+v, errors %v", n, s.Errors())
	}
	if srv.Requests("/") != 0 {
		t.Error("asked a Kerberized NodeManager")
	}
}
