package yarn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

// Config configures a Source; the collector fills it from flags and
// yarn-site.xml, tests from httptest servers.
type Config struct {
	// NodeManagerURL is the NodeManager's web base URL
	// (http://host:8042); empty turns the Source off.
	NodeManagerURL string
	// ResourceManagerURLs are tried in order for application names; none
	// leaves applications unnamed.
	ResourceManagerURLs []string
	// Conf is yarn-site.xml as read: the ratio and check modes, used until
	// the NodeManager's own node info says otherwise.
	Conf Conf
	// Timeout bounds each request.
	Timeout time.Duration
	// Interval is the time between two polls of the container list while
	// no container is near its allocation; HurryInterval while one is
	// (Hurry). The NodeManager lists a finished container for seconds
	// only: HurryInterval must be shorter than that.
	Interval, HurryInterval time.Duration
	// Retention: a container the NodeManager no longer lists is kept this
	// long, so a death noticed later still finds its exit status.
	Retention time.Duration
	// MaxApps bounds the application names kept (the oldest goes first).
	MaxApps int
}

// DefaultConfig's intervals: 2 s while a container is near its allocation
// is shorter than the seconds the NodeManager lists a finished container
// and than its own 3 s monitor pass; 15 s otherwise costs one small
// request per 15 s.
var DefaultConfig = Config{Timeout: 5 * time.Second, Interval: 15 * time.Second, HurryInterval: 2 * time.Second,
	Retention: 10 * time.Minute, MaxApps: 1000}

// appRetry: a failed application lookup is tried again after this long.
const appRetry = time.Minute

// Container is a YARN container as the Source last saw it.
type Container struct {
	ID, AppID, State, User, ExecutionType string
	// Allocation is the container's memory allocation in bytes
	// (totalMemoryNeededMB × MiB): the polling monitor's physical-memory
	// limit, and in strict cgroup mode the cgroup's limit.
	Allocation uint64
	// VmemLimit is Allocation × yarn.nodemanager.vmem-pmem-ratio.
	VmemLimit uint64
	// ExitCode is the container's exit status once finished (ExitKilledPmem,
	// the process's code, …); ExitInvalid while it runs.
	ExitCode int
	// Diagnostics are the last MaxDiagnosticsBytes of the NodeManager's;
	// Kill is what the whole of them names (ParseDiagnostics).
	Diagnostics     string
	Kill            Kill
	fullDiagnostics string // as last read, to parse them again only when they change
	FirstSeen       time.Time
	LastSeen        time.Time // the last list that had it
	// Gone: the NodeManager no longer lists it (since LastSeen).
	Gone bool
}

// Finished reports whether the NodeManager gave the container an exit
// status that is its last word: in one of its ended states (Ended), or,
// from a NodeManager whose states are not known, any status.
func (c Container) Finished() bool {
	if ended, ok := Ended(c.State); ok {
		return ended && c.ExitCode != ExitInvalid
	}
	return c.ExitCode != ExitInvalid
}

// Node is what is known of the NodeManager.
type Node struct {
	URL         string
	Reachable   bool      // the last poll of the container list succeeded
	LastSuccess time.Time // zero if never
	Err         string    // the last failure, for the log and the status page
	Version     string
	// The monitor's settings: from the NodeManager's node info where it
	// says (the check modes), else from yarn-site.xml.
	PmemCheck, VmemCheck bool
	VmemRatio            float64
	MonitorInterval      time.Duration
	MonitorEnabled       bool
	SmapsRSS             bool
	// Enforcement is what the NodeManager does about a container over its
	// allocation: its line's rule (from Version; any line until it is
	// read) on these settings.
	Enforcement Enforcement
}

// settings takes the monitor's settings from yarn-site.xml and what the
// NodeManager's node info says of them, and applies its line's rule.
func (n *Node) settings(c Conf, info NodeInfo) {
	// The NodeManager's own answer beats a yarn-site.xml the exporter may
	// have read from elsewhere.
	if info.PmemCheckEnabled != nil {
		c.PmemCheck = *info.PmemCheckEnabled
	}
	if info.VmemCheckEnabled != nil {
		c.VmemCheck = *info.VmemCheckEnabled
	}
	n.Version = info.NodeManagerVersion
	n.PmemCheck, n.VmemCheck, n.VmemRatio, n.SmapsRSS = c.PmemCheck, c.VmemCheck, c.VmemRatio, c.SmapsRSS
	n.MonitorInterval, n.MonitorEnabled = time.Duration(c.MonitorMillis)*time.Millisecond, c.MonitorEnabled
	n.Enforcement = Enforce(c, info.NodeManagerVersion)
}

// ErrorCount is how many requests to a target failed with a kind.
type ErrorCount struct {
	Target, Kind string
	Count        uint64
}

type appEntry struct {
	name    string
	found   bool
	retryAt time.Time // when a failed lookup may be tried again
}

// Source polls the NodeManager and asks the ResourceManager for names in
// the background. Its methods return what it holds and never wait on the
// network.
type Source struct {
	cfg    Config
	logger log.Logger
	client *httpget.Client

	mu         sync.Mutex
	containers map[string]*Container
	node       Node
	errs       map[[2]string]uint64
	apps       map[string]*appEntry
	appOrder   []string // insertion order, for the bound
	hurryUntil time.Time

	wake    chan struct{}
	lookups chan string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// NewSource returns a Source; zero fields of cfg take DefaultConfig's.
// Start begins polling.
func NewSource(cfg Config, logger log.Logger) *Source {
	d := DefaultConfig
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.Interval <= 0 {
		cfg.Interval = d.Interval
	}
	if cfg.HurryInterval <= 0 || cfg.HurryInterval > cfg.Interval {
		cfg.HurryInterval = min(d.HurryInterval, cfg.Interval)
	}
	if cfg.Retention <= 0 {
		cfg.Retention = d.Retention
	}
	if cfg.MaxApps <= 0 {
		cfg.MaxApps = d.MaxApps
	}
	if cfg.Conf.Props == nil && cfg.Conf.VmemRatio < 1 {
		cfg.Conf, _ = FromProps(map[string]string{}) // YARN's defaults
	}
	client := newHTTPClient(cfg.Timeout)
	s := &Source{cfg: cfg, logger: logger, client: client,
		containers: map[string]*Container{}, errs: map[[2]string]uint64{}, apps: map[string]*appEntry{},
		wake: make(chan struct{}, 1), lookups: make(chan string, 64),
		node: Node{URL: cfg.NodeManagerURL}}
	s.node.settings(cfg.Conf, NodeInfo{})
	return s
}

// Start begins polling in the background; Stop ends it. With Kerberos
// required it polls nothing: the error is logged once and counted.
func (s *Source) Start() {
	if s.cfg.Conf.Kerberos() {
		level.Error(s.logger).Log("msg", "YARN web services not read", "err", ErrKerberos)
		s.mu.Lock()
		s.node.Err = ErrKerberos.Error()
		s.errs[[2]string{TargetNodeManager, ErrKerberosKind}]++
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go s.pollLoop(ctx)
	go s.lookupLoop(ctx)
}

// Stop ends the background loops and waits for them.
func (s *Source) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

// Hurry asks for polls every HurryInterval until the given time: the
// tracker calls it while a container's process tree is near its
// allocation, so that the container's exit status is read before the
// NodeManager drops it. A later call extends, an earlier one never
// shortens.
func (s *Source) Hurry(until time.Time) {
	s.mu.Lock()
	wakeNow := until.After(s.hurryUntil) && !s.hurrying(time.Now())
	if until.After(s.hurryUntil) {
		s.hurryUntil = until
	}
	s.mu.Unlock()
	if wakeNow {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *Source) hurrying(now time.Time) bool { return now.Before(s.hurryUntil) }

// Container returns the container with this id as last seen, if the
// NodeManager listed it within Retention.
func (s *Source) Container(id string) (Container, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return Container{}, false
	}
	return *c, true
}

// Allocation returns a container's memory allocation in bytes, if the
// NodeManager listed it (jvm.YARNSource): the budget of the executor
// that runs in it when no cgroup limit holds it.
func (s *Source) Allocation(id string) (uint64, bool) {
	c, ok := s.Container(id)
	if !ok || c.Allocation == 0 {
		return 0, false
	}
	return c.Allocation, true
}

// Containers returns every container held, running and finished.
func (s *Source) Containers() []Container {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Container, 0, len(s.containers))
	for _, c := range s.containers {
		out = append(out, *c)
	}
	return out
}

// AppName returns the application's name from the ResourceManager, if it
// has been read. An application not asked about yet is queued for a
// lookup (once; a failure is tried again after a minute).
func (s *Source) AppName(appID string) (string, bool) {
	s.mu.Lock()
	e, ok := s.apps[appID]
	s.mu.Unlock()
	if ok && (e.found || time.Now().Before(e.retryAt)) {
		return e.name, e.found
	}
	s.queueLookup(appID)
	return "", false
}

// Node returns what is known of the NodeManager.
func (s *Source) Node() Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.node
}

// Errors returns the failed requests so far by target and kind.
func (s *Source) Errors() []ErrorCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ErrorCount, 0, len(s.errs))
	for k, n := range s.errs {
		out = append(out, ErrorCount{Target: k[0], Kind: k[1], Count: n})
	}
	return out
}

func (s *Source) countError(target string, err error) {
	s.mu.Lock()
	s.errs[[2]string{target, KindOf(err)}]++
	s.mu.Unlock()
}

func (s *Source) queueLookup(appID string) {
	if !ValidAppID(appID) || len(s.cfg.ResourceManagerURLs) == 0 {
		return
	}
	select {
	case s.lookups <- appID:
	default: // full: asked again at the next list or call
	}
}

func joinURL(base, path string) string { return strings.TrimRight(base, "/") + path }

var errNoRM = errors.New("no ResourceManager answered")
