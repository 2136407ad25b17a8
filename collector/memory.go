package collector

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

func init() {
	registerCollector("memory", true, func(logger log.Logger, _ *Dependencies) (Collector, error) {
		return NewMemoryCollector(FlagPaths(), logger)
	})
}

// meminfoField is one /proc/meminfo line exported as a gauge.
type meminfoField struct {
	desc  *prometheus.Desc
	value func(procfs.Meminfo) *uint64
}

func newMeminfoField(name, help string, value func(procfs.Meminfo) *uint64) meminfoField {
	return meminfoField{
		desc:  prometheus.NewDesc(prometheus.BuildFQName(namespace, "node_memory", name+"_bytes"), help, nil, nil),
		value: value,
	}
}

// meminfoFields are the lines a memory investigation needs: what is there,
// what can be had, what page cache and kernel hold, and what is promised.
var meminfoFields = []meminfoField{
	newMeminfoField("total", "Usable RAM (MemTotal).", func(m procfs.Meminfo) *uint64 { return m.MemTotalBytes }),
	newMeminfoField("available", "Memory available for new work without swapping (MemAvailable).", func(m procfs.Meminfo) *uint64 { return m.MemAvailableBytes }),
	newMeminfoField("free", "Memory not used at all (MemFree).", func(m procfs.Meminfo) *uint64 { return m.MemFreeBytes }),
	newMeminfoField("cached", "Page cache (Cached).", func(m procfs.Meminfo) *uint64 { return m.CachedBytes }),
	newMeminfoField("buffers", "Block device buffers (Buffers).", func(m procfs.Meminfo) *uint64 { return m.BuffersBytes }),
	newMeminfoField("anon", "Anonymous memory mapped into user space (AnonPages).", func(m procfs.Meminfo) *uint64 { return m.AnonPagesBytes }),
	newMeminfoField("shmem", "Shared memory and tmpfs (Shmem).", func(m procfs.Meminfo) *uint64 { return m.ShmemBytes }),
	newMeminfoField("slab_reclaimable", "Reclaimable kernel slab (SReclaimable).", func(m procfs.Meminfo) *uint64 { return m.SReclaimableBytes }),
	newMeminfoField("slab_unreclaimable", "Unreclaimable kernel slab (SUnreclaim).", func(m procfs.Meminfo) *uint64 { return m.SUnreclaimBytes }),
	newMeminfoField("dirty", "Memory waiting to be written back to disk (Dirty).", func(m procfs.Meminfo) *uint64 { return m.DirtyBytes }),
	newMeminfoField("committed_as", "Memory promised to processes (Committed_AS).", func(m procfs.Meminfo) *uint64 { return m.CommittedASBytes }),
	newMeminfoField("commit_limit", "Commit limit under strict overcommit (CommitLimit).", func(m procfs.Meminfo) *uint64 { return m.CommitLimitBytes }),
	newMeminfoField("hugepages_anon", "Anonymous transparent huge pages (AnonHugePages).", func(m procfs.Meminfo) *uint64 { return m.AnonHugePagesBytes }),
	newMeminfoField("swap_total", "Swap space in total (SwapTotal).", func(m procfs.Meminfo) *uint64 { return m.SwapTotalBytes }),
	newMeminfoField("swap_free", "Swap space unused (SwapFree).", func(m procfs.Meminfo) *uint64 { return m.SwapFreeBytes }),
}

type memoryCollector struct {
	fs                 procfs.FS
	paths              Paths
	logger             log.Logger
	pressure, oomKills *prometheus.Desc
}

// NewMemoryCollector reads /proc/meminfo, /proc/pressure/memory and
// /proc/vmstat's oom_kill.
func NewMemoryCollector(paths Paths, logger log.Logger) (Collector, error) {
	fs, err := procfs.NewFS(paths.ProcFS)
	if err != nil {
		return nil, fmt.Errorf("open procfs: %w", err)
	}
	return &memoryCollector{
		fs:     fs,
		paths:  paths,
		logger: logger,
		pressure: newDesc("node_memory", "pressure_stall_seconds_total",
			"Time some (or all, kind=full) non-idle tasks were stalled waiting for memory (/proc/pressure/memory).", "kind"),
		oomKills: newDesc("node", "oom_kills_total",
			"Processes killed by the kernel OOM killer on this node, global and cgroup kills alike (/proc/vmstat oom_kill)."),
	}, nil
}

func (c *memoryCollector) Update(ch chan<- prometheus.Metric) error {
	// One bad file costs only its own series.
	return errors.Join(c.updateMeminfo(ch), c.updatePressure(ch), c.updateVMStat(ch))
}

func (c *memoryCollector) updateMeminfo(ch chan<- prometheus.Metric) error {
	mi, err := c.fs.Meminfo()
	if err != nil {
		return fmt.Errorf("meminfo: %w", err)
	}
	if mi.MemTotalBytes == nil {
		return errors.New("meminfo: no MemTotal line")
	}
	for _, f := range meminfoFields {
		if v := f.value(mi); v != nil {
			ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, float64(*v))
		}
	}
	return nil
}

func (c *memoryCollector) updatePressure(ch chan<- prometheus.Metric) error {
	psi, err := c.fs.PSIStatsForResource("memory")
	if err != nil {
		// Kernels without CONFIG_PSI have no file; with PSI compiled in but
		// off (psi=0) they refuse to open it (EOPNOTSUPP): the series are
		// absent, which is not a failure.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
			return nil
		}
		return fmt.Errorf("pressure: %w", err)
	}
	if psi.Some == nil {
		return errors.New("pressure: no 'some' line in /proc/pressure/memory")
	}
	ch <- prometheus.MustNewConstMetric(c.pressure, prometheus.CounterValue, float64(psi.Some.Total)/1e6, "some")
	if psi.Full != nil {
		ch <- prometheus.MustNewConstMetric(c.pressure, prometheus.CounterValue, float64(psi.Full.Total)/1e6, "full")
	}
	return nil
}

func (c *memoryCollector) updateVMStat(ch chan<- prometheus.Metric) error {
	data, err := os.ReadFile(filepath.Join(c.paths.ProcFS, "vmstat"))
	if err != nil {
		return fmt.Errorf("vmstat: %w", err)
	}
	kills, ok, err := parseVMStatOOMKill(data)
	if err != nil {
		return fmt.Errorf("vmstat: %w", err)
	}
	if !ok {
		// oom_kill was added to vmstat in Linux 4.13.
		return nil
	}
	ch <- prometheus.MustNewConstMetric(c.oomKills, prometheus.CounterValue, float64(kills))
	return nil
}

// parseVMStatOOMKill returns the oom_kill counter of /proc/vmstat and
// whether the line was there. procfs does not parse vmstat.
func parseVMStatOOMKill(data []byte) (uint64, bool, error) {
	for line := range bytes.Lines(data) {
		name, value, found := bytes.Cut(line, []byte{' '})
		if !found || string(name) != "oom_kill" {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(value)), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("oom_kill: %w", err)
		}
		return n, true, nil
	}
	return 0, false, nil
}
