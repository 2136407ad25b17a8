package cloud

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// Config is everything the Refresher needs; the collector fills it from
// flags, tests from fixtures and httptest servers.
type Config struct {
	// Provider is ProviderAuto (detect from DMI) or a provider name.
	Provider         string
	SysFS            string
	AWSMetadataURL   string
	GCPMetadataURL   string
	AzureMetadataURL string
	// Timeout bounds every single metadata or API request.
	Timeout         time.Duration
	RefreshInterval time.Duration
	// PollInterval is how often notices are polled; 0 disables polling.
	PollInterval time.Duration
	Kubernetes   KubernetesConfig
	// EMRInfoDir is where an EMR node's instance.json and job-flow.json
	// are (DefaultEMRInfoDir when empty): they name its node pool.
	EMRInfoDir string
}

// minRetry is the first wait after a failed refresh; it doubles up to
// RefreshInterval, so a metadata service that was briefly unreachable at
// boot does not leave the exporter without facts for an hour.
const minRetry = 15 * time.Second

// metadataClient is one provider's metadata service.
type metadataClient interface {
	instance(ctx context.Context) (Instance, error)
	// notices returns the state of each event kind it could read.
	notices(ctx context.Context) ([]Notice, error)
	// events lists the event kinds the provider announces.
	events() []string
}

// Snapshot is the cache a scrape reads.
type Snapshot struct {
	// Refreshed is false until the first refresh has finished.
	Refreshed      bool
	Instance       Instance
	NodeLabels     map[string]string
	Notices        []Notice
	RefreshSuccess bool
	// LastSuccess is when a refresh last succeeded, zero if never.
	LastSuccess time.Time
}

// Refresher keeps the cache: a refresh at start and every RefreshInterval,
// a notice poll every PollInterval, both in the background. Snapshot never
// waits for the network.
type Refresher struct {
	cfg    Config
	logger log.Logger
	kube   *kubeClient
	// nodeName labels the info metric even when the Node cannot be read.
	nodeName string
	// clients are built once; which one is asked is decided per refresh.
	clients map[string]metadataClient
	// pods lists this node's pods; nil when off.
	pods *podLister

	refreshMu sync.Mutex // one refresh at a time
	lastIMDS  *Instance  // last good answers, kept across failed refreshes
	lastNode  *kubeNode

	mu     sync.RWMutex
	snap   Snapshot
	client metadataClient
	// clientChanged wakes the poll loop when a refresh changes the
	// provider asked: with none, the loop waits on it instead of a ticker.
	clientChanged chan struct{}
	notices       map[string]Notice
	pollFailing   bool

	startOnce, stopOnce sync.Once
	cancel              context.CancelFunc
	wg                  sync.WaitGroup
}

// NewRefresher checks cfg and builds the clients; nothing is fetched
// until Start or Refresh.
func NewRefresher(cfg Config, logger log.Logger) (*Refresher, error) {
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("cloud timeout must be positive, got %v", cfg.Timeout)
	}
	if cfg.RefreshInterval <= 0 {
		return nil, fmt.Errorf("cloud refresh interval must be positive, got %v", cfg.RefreshInterval)
	}
	if cfg.PollInterval < 0 {
		return nil, fmt.Errorf("cloud interruption poll interval must not be negative, got %v", cfg.PollInterval)
	}
	if cfg.Provider == "" {
		cfg.Provider = ProviderAuto
	}
	known := false
	for _, p := range Providers {
		known = known || p == cfg.Provider
	}
	if !known {
		return nil, fmt.Errorf("unknown cloud provider %q", cfg.Provider)
	}
	httpClient := newMetadataHTTPClient(cfg.Timeout)
	r := &Refresher{
		cfg:    cfg,
		logger: logger,
		clients: map[string]metadataClient{
			ProviderAWS:   newAWSClient(cfg.AWSMetadataURL, httpClient),
			ProviderGCP:   newGCPClient(cfg.GCPMetadataURL, httpClient),
			ProviderAzure: newAzureClient(cfg.AzureMetadataURL, httpClient),
		},
		notices:       map[string]Notice{},
		nodeName:      cfg.Kubernetes.NodeName,
		clientChanged: make(chan struct{}, 1),
	}
	if cfg.Kubernetes.NodeName != "" {
		kube, err := newKubeClient(cfg.Kubernetes, cfg.Timeout)
		switch {
		case errors.Is(err, errNotInCluster):
			// A NODE_NAME outside Kubernetes: say so once and do not
			// count it as a failed refresh for the life of the process.
			level.Warn(logger).Log("msg", "Kubernetes node name given but no API server; node labels off", "node", cfg.Kubernetes.NodeName, "err", err)
			r.cfg.Kubernetes.NodeName = ""
		case err != nil:
			// Not fatal: every refresh reports it (refresh_success 0).
			level.Warn(logger).Log("msg", "Kubernetes node labels unavailable", "err", err)
		}
		r.kube = kube
	}
	if pc := cfg.Kubernetes.Pods; pc.Enabled && r.kube != nil && r.cfg.Kubernetes.NodeName != "" {
		if pc.RefreshInterval <= 0 || pc.MinInterval <= 0 {
			return nil, fmt.Errorf("pod refresh intervals must be positive, got %v and %v", pc.RefreshInterval, pc.MinInterval)
		}
		kube := r.kube
		r.pods = newPodLister(pc, func(ctx context.Context) ([]Pod, error) {
			return kube.pods(ctx, pc.LabelAllowlist)
		}, logger)
	}
	return r, nil
}

// Start runs the refresh and poll loops until Stop.
func (r *Refresher) Start() {
	r.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		firstRefresh := make(chan struct{})
		r.wg.Add(1)
		go r.refreshLoop(ctx, firstRefresh)
		if r.cfg.PollInterval > 0 {
			r.wg.Add(1)
			go r.pollLoop(ctx, firstRefresh)
		}
		if r.pods != nil {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.pods.run(ctx)
			}()
		}
	})
}

// Stop ends the loops, cancelling requests in flight, and waits for them.
func (r *Refresher) Stop() {
	r.stopOnce.Do(func() {
		if r.cancel != nil {
			r.cancel()
		}
		r.wg.Wait()
	})
}

// Snapshot returns a copy of the cache.
func (r *Refresher) Snapshot() Snapshot {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.snap
	s.Notices = make([]Notice, 0, len(r.notices))
	for _, n := range r.notices {
		s.Notices = append(s.Notices, n)
	}
	sort.Slice(s.Notices, func(i, j int) bool { return s.Notices[i].Event < s.Notices[j].Event })
	return s
}

// backoff is the wait after the next failure: twice this one's, never
// more than the refresh interval, so that a doubling never overflows into
// no wait at all.
func backoff(retry, interval time.Duration) time.Duration { return min(2*retry, interval) }

func (r *Refresher) refreshLoop(ctx context.Context, firstRefresh chan<- struct{}) {
	defer r.wg.Done()
	retry := minRetry
	for first := true; ; first = false {
		wait := r.cfg.RefreshInterval
		if err := r.Refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			level.Warn(r.logger).Log("msg", "Cloud metadata refresh failed", "retry_in", min(retry, wait), "err", err)
			wait = min(retry, wait)
			retry = backoff(retry, r.cfg.RefreshInterval)
		} else {
			retry = minRetry
		}
		if first {
			close(firstRefresh)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

func (r *Refresher) pollLoop(ctx context.Context, firstRefresh <-chan struct{}) {
	defer r.wg.Done()
	select {
	case <-ctx.Done():
		return
	case <-firstRefresh:
	}
	// Without a metadata service to ask (--cloud.provider=none, or none
	// detected) there is nothing to poll: the loop sleeps until a refresh
	// finds one, rather than waking the process every PollInterval on
	// every node of an on-premises fleet.
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		if !r.hasClient() {
			if ticker != nil {
				ticker.Stop()
				ticker = nil
			}
			select {
			case <-ctx.Done():
				return
			case <-r.clientChanged:
			}
			continue
		}
		if ticker == nil {
			ticker = time.NewTicker(r.cfg.PollInterval)
		}
		r.Poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-r.clientChanged:
		}
	}
}

func (r *Refresher) hasClient() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.client != nil
}

// Refresh detects the provider and asks its metadata service and the
// Kubernetes API once, then updates the cache. An error means some source
// did not answer; what the others said is cached all the same.
func (r *Refresher) Refresh(ctx context.Context) error {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()

	// DMI first: a local file read that settles "which cloud, if any"
	// without a single packet, so a machine outside any cloud never waits
	// on a metadata address nobody answers.
	dmi := ReadDMI(r.cfg.SysFS)
	provider, baseSource := r.cfg.Provider, SourceFlag
	if provider == ProviderAuto {
		provider, baseSource = DetectProvider(dmi), SourceDMI
	}
	var errs []error

	var node *kubeNode
	if r.cfg.Kubernetes.NodeName != "" {
		if r.kube == nil {
			errs = append(errs, errors.New("kubernetes: no API client (see the start-up log)"))
		} else if n, err := r.kube.node(ctx); err != nil {
			errs = append(errs, fmt.Errorf("kubernetes node %s: %w", r.cfg.Kubernetes.NodeName, err))
		} else {
			r.lastNode = &n
		}
		node = r.lastNode
	}
	var fromNode *Instance
	if node != nil {
		inst := instanceFromNode(*node)
		fromNode = &inst
		// DMI may be hidden from a container; the Node's providerID is
		// just as local a fact.
		if provider == ProviderNone && r.cfg.Provider == ProviderAuto && inst.Provider != "" {
			provider, baseSource = inst.Provider, SourceKubernetes
		}
	}

	client := r.clients[provider]
	if client != nil {
		inst, err := client.instance(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s metadata: %w", provider, err))
		} else {
			r.lastIMDS = &inst
		}
	}
	var fromIMDS *Instance
	if client != nil && r.lastIMDS != nil && r.lastIMDS.Provider == provider {
		fromIMDS = r.lastIMDS
	}

	inst := mergeInstance(instanceFromDMI(provider, dmi), fromIMDS, fromNode, baseSource)
	// An EMR node says what it is in local files; a Kubernetes Node's
	// pool, if any, stands.
	if pool, ok, err := readEMR(r.cfg.EMRInfoDir); err != nil {
		errs = append(errs, fmt.Errorf("EMR node files: %w", err))
	} else if ok && fromNode == nil {
		inst.NodePool, inst.Platform = pool, PlatformEMR
	}
	// The provider decided above stands, --cloud.provider=none included,
	// even if a Node's providerID names another.
	inst.Provider = provider
	if provider == ProviderNone {
		inst.Source = SourceNone
		if fromNode != nil {
			inst.Source = SourceKubernetes
		}
	}
	if inst.Node == "" {
		inst.Node = r.nodeName
	}
	var labels map[string]string
	if node != nil && len(r.cfg.Kubernetes.LabelAllowlist) > 0 {
		labels = allowedNodeLabels(node.Labels, r.cfg.Kubernetes.LabelAllowlist)
	}

	err := errors.Join(errs...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != client {
		// A new provider (or none): the old one's notices mean nothing.
		r.notices = map[string]Notice{}
		select {
		case r.clientChanged <- struct{}{}:
		default:
		}
	}
	r.client = client
	r.snap.Refreshed = true
	if cleaned := inst.clean(); cleaned != r.snap.Instance {
		// Once at start-up and whenever the facts change: what an
		// operator checks first when the labels look wrong.
		level.Info(r.logger).Log("msg", "Instance identified", "provider", cleaned.Provider, "source", cleaned.Source,
			"instance_type", cleaned.InstanceType, "lifecycle", cleaned.Lifecycle, "zone", cleaned.Zone, "node", cleaned.Node)
		r.snap.Instance = cleaned
	}
	r.snap.NodeLabels = labels
	r.snap.RefreshSuccess = err == nil
	if err == nil {
		r.snap.LastSuccess = time.Now()
	}
	return err
}

// Poll asks the current provider's metadata service for notices once and
// updates the cache; kinds it could not read keep their last state, so a
// flaky answer does not flap a pending notice to 0.
func (r *Refresher) Poll(ctx context.Context) {
	r.mu.RLock()
	client := r.client
	r.mu.RUnlock()
	if client == nil {
		return
	}
	notices, err := client.notices(ctx)

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != client {
		return // the provider changed under us; this answer is stale
	}
	for _, n := range notices {
		if n.Pending && !r.notices[n.Event].Pending {
			level.Warn(r.logger).Log("msg", "Cloud announced an interruption", "event", n.Event, "time", n.Time)
		}
		r.notices[n.Event] = n
	}
	switch {
	case err != nil && !r.pollFailing && ctx.Err() == nil:
		level.Warn(r.logger).Log("msg", "Interruption notice poll failing", "err", err)
		r.pollFailing = true
	case err == nil && r.pollFailing:
		level.Info(r.logger).Log("msg", "Interruption notice poll recovered")
		r.pollFailing = false
	}
}
