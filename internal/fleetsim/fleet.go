package fleetsim

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// Config says what fleet to simulate.
type Config struct {
	Nodes    int
	Seed     uint64
	Clusters []string // default: spark-a and spark-b; nodes alternate
	// Origin is when the simulation begins: every executor slot is busy
	// then, mid-way through an executor's life.
	Origin time.Time
	// Interval is Prometheus's scrape interval: a new kill or exit counter
	// reads 0 for one interval first, as the exporter's does for one scrape.
	Interval time.Duration
	// MeanLifetime is an executor's mean life (default 1 h); spot notices
	// and the time between executors scale with it, so a test can run a
	// fleet's day in minutes.
	MeanLifetime time.Duration
	// Retention is how long an exit or kill counter stays (the exporter's
	// --exits.retention and --oom.retention, 1 h).
	Retention time.Duration
}

// InstanceType is a machine kind of the fleet and how Spark fills it.
type InstanceType struct {
	Name      string
	Memory    float64 // bytes
	Executors int     // executor slots
	Heap      float64 // -Xmx of each executor, bytes
}

const gib = 1 << 30

// InstanceTypes are the fleet's machines, chosen in turn by node index;
// 7 executors per node on average.
var InstanceTypes = []InstanceType{
	{"r5.2xlarge", 64 * gib, 8, 6 * gib},
	{"r5.xlarge", 32 * gib, 4, 6 * gib},
	{"m5.4xlarge", 64 * gib, 8, 5 * gib},
	{"r6i.4xlarge", 128 * gib, 8, 12 * gib},
}

var zones = []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}

// Node is one simulated machine.
type Node struct {
	Index     int
	Cluster   string
	Instance  string // the instance label Prometheus gives its target
	Type      InstanceType
	Lifecycle string // spot or on-demand
	Zone      string
	Name      string // the Kubernetes node
	xmx       string

	mu    sync.Mutex
	slots [][]jvm // each slot's executors, generated as time needs them
}

// Fleet is the simulated fleet.
type Fleet struct {
	cfg   Config
	tmpl  *Template
	nodes []*Node
	base  templateValues
}

// New makes the fleet cfg describes from a template scrape.
func New(cfg Config, tmpl *Template) *Fleet {
	if len(cfg.Clusters) == 0 {
		cfg.Clusters = []string{"spark-a", "spark-b"}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.MeanLifetime <= 0 {
		cfg.MeanLifetime = time.Hour
	}
	if cfg.Retention <= 0 {
		cfg.Retention = time.Hour
	}
	if cfg.Origin.IsZero() {
		cfg.Origin = time.Now()
	}
	f := &Fleet{cfg: cfg, tmpl: tmpl, base: readTemplateValues(tmpl)}
	for i := range cfg.Nodes {
		it := InstanceTypes[i%len(InstanceTypes)]
		lc := "on-demand"
		if f.rand(uint64(i), 0, 0, saltLifecycle) < 0.6 {
			lc = "spot"
		}
		n := &Node{
			Index:     i,
			Cluster:   cfg.Clusters[i%len(cfg.Clusters)],
			Instance:  fmt.Sprintf("10.%d.%d.%d:9482", i%len(cfg.Clusters)+1, i/250, i%250+1),
			Type:      it,
			Lifecycle: lc,
			Zone:      zones[(i/len(cfg.Clusters))%len(zones)],
			Name:      fmt.Sprintf("ip-10-%d-%d-%d.eu-west-1.compute.internal", i%len(cfg.Clusters)+1, i/250, i%250+1),
			slots:     make([][]jvm, it.Executors),
			xmx:       fmt.Sprintf("%dg", int(it.Heap/gib)),
		}
		f.nodes = append(f.nodes, n)
	}
	return f
}

// Nodes returns the fleet's machines.
func (f *Fleet) Nodes() []*Node { return f.nodes }

// Config returns the configuration with its defaults filled in.
func (f *Fleet) Config() Config { return f.cfg }

// Exit reasons, as the exporter judges them.
const (
	reasonExited        = "exited"
	reasonKilled        = "killed"
	reasonOOMKilled     = "oom_killed"
	reasonHeapExhausted = "heap_exhausted"
	reasonInterrupted   = "interrupted"
)

// nativeRegions are the regions a native kill names: what grew.
var nativeRegions = []string{"malloc", "native_mmap", "thread_stacks", "shmem", "python"}

// jvm is one executor's life on a slot.
type jvm struct {
	seq        int // its number on the slot
	start, end time.Time
	pid        int
	app        string
	executor   string
	reason     string
	cause      string // of the OOM kill, for reason oom_killed
	region     string // what grew, for a native kill
	leak       float64
	// Its labels, formatted once.
	pidLabel, pod, uid, containerID string
}

// salts keep the random draws of different decisions apart.
const (
	saltLifecycle = iota + 1
	saltLife
	saltGap
	saltReason
	saltRegion
	saltNotice
	saltPhase
	saltLeak
)

// rand is a deterministic draw in [0, 1) for the given coordinates.
func (f *Fleet) rand(a, b, c, salt uint64) float64 {
	x := f.cfg.Seed ^ 0x9e3779b97f4a7c15
	for _, v := range []uint64{a, b, c, salt} {
		x ^= v + 0x9e3779b97f4a7c15 + (x << 6) + (x >> 2)
		x = splitmix(x)
	}
	return float64(x>>11) / (1 << 53)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// notice is the spot interruption notice window of node n that covers or
// follows t within the same period, if any: spot nodes get one in 4 % of
// periods (one MeanLifetime each), lasting 2 minutes of an hour's life.
func (f *Fleet) notice(n *Node, period int64) (from, to time.Time, ok bool) {
	if n.Lifecycle != "spot" || f.rand(uint64(n.Index), uint64(period), 0, saltNotice) >= 0.04 {
		return from, to, false
	}
	life := f.cfg.MeanLifetime
	length := max(life/30, 2*f.cfg.Interval)
	offset := time.Duration(f.rand(uint64(n.Index), uint64(period), 1, saltNotice) * float64(life-length))
	from = f.cfg.Origin.Add(time.Duration(period)*life + offset)
	return from, from.Add(length), true
}

// Pending reports whether node n's spot interruption notice is up at t,
// and when the interruption comes.
func (f *Fleet) Pending(n *Node, t time.Time) (time.Time, bool) {
	period := int64(math.Floor(float64(t.Sub(f.cfg.Origin)) / float64(f.cfg.MeanLifetime)))
	if from, to, ok := f.notice(n, period); ok && !t.Before(from) && t.Before(to) {
		return to, true
	}
	return time.Time{}, false
}

// interruption returns the end of the first notice window that ends in
// (start, end], if any: the executor is interrupted then.
func (f *Fleet) interruption(n *Node, start, end time.Time) (time.Time, bool) {
	life := f.cfg.MeanLifetime
	first := int64(math.Floor(float64(start.Sub(f.cfg.Origin))/float64(life))) - 1
	last := int64(math.Floor(float64(end.Sub(f.cfg.Origin)) / float64(life)))
	for p := first; p <= last; p++ {
		if _, to, ok := f.notice(n, p); ok && to.After(start) && !to.After(end) {
			return to, true
		}
	}
	return time.Time{}, false
}

// next makes the executor that follows prev on slot s of node n (prev nil:
// the first, already running at Origin).
func (f *Fleet) next(n *Node, s int, prev *jvm) jvm {
	life := f.cfg.MeanLifetime
	seq := 0
	var start time.Time
	if prev == nil {
		draw := f.rand(uint64(n.Index), uint64(s), 0, saltLife)
		start = f.cfg.Origin.Add(-time.Duration(draw * float64(life)))
	} else {
		seq = prev.seq + 1
		gap := time.Duration((0.5 + f.rand(uint64(n.Index), uint64(s), uint64(seq), saltGap)) * float64(life) / 60)
		start = prev.end.Add(gap)
	}
	idx, slot, k := uint64(n.Index), uint64(s), uint64(seq)
	j := jvm{
		seq:   seq,
		start: start,
		end:   start.Add(time.Duration((0.25 + 1.5*f.rand(idx, slot, k, saltLife+100)) * float64(life))),
		pid:   10000 + seq*16 + s,
		// An application's executors are spread over 4 nodes of a cluster
		// and start in the same period.
		app:      fmt.Sprintf("app-%s-%04d", start.Truncate(life).UTC().Format("20060102150405"), n.Index/(4*len(f.cfg.Clusters))),
		executor: fmt.Sprint((n.Index/len(f.cfg.Clusters))%4*100 + s*10 + seq%10 + 1),
		leak:     f.rand(idx, slot, k, saltLeak),
	}
	j.pidLabel = fmt.Sprint(j.pid)
	j.pod = fmt.Sprintf("%s-exec-%s", strings.ToLower(j.app), j.executor)
	j.uid = fmt.Sprintf("%08x-0000-4000-8000-%012x", n.Index, j.pid)
	j.containerID = fmt.Sprintf("containerd://%016x%048x", n.Index, j.pid)
	if to, ok := f.interruption(n, j.start, j.end); ok {
		j.end, j.reason = to, reasonInterrupted
		return j
	}
	switch r := f.rand(idx, slot, k, saltReason); {
	case r < 0.80:
		j.reason = reasonExited
	case r < 0.85:
		j.reason = reasonKilled
	case r < 0.89:
		j.reason, j.cause = reasonOOMKilled, "native"
		j.region = nativeRegions[int(f.rand(idx, slot, k, saltRegion)*float64(len(nativeRegions)))]
	case r < 0.91:
		j.reason, j.cause = reasonOOMKilled, "heap"
	case r < 0.95:
		j.reason = reasonHeapExhausted
	default:
		j.reason = reasonExited
	}
	return j
}

// history returns slot s's executors that started before t, generating
// them as needed. The caller holds n.mu.
func (f *Fleet) history(n *Node, s int, t time.Time) []jvm {
	h := n.slots[s]
	if len(h) == 0 {
		h = append(h, f.next(n, s, nil))
	}
	for h[len(h)-1].start.Before(t) {
		h = append(h, f.next(n, s, &h[len(h)-1]))
	}
	n.slots[s] = h
	i := len(h) - 1
	for i > 0 && !h[i-1].start.Before(t) {
		i--
	}
	return h[:i]
}
