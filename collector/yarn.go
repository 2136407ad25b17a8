package collector

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/yarn"
)

var (
	yarnConfDir = kingpin.Flag("yarn.conf-dir", "Hadoop configuration directory: yarn-site.xml (and core-site.xml) name the NodeManager and ResourceManager and their memory checks. Without yarn-site.xml and --yarn.nodemanager.url, the yarn collector reports nothing.").
			Default("/etc/hadoop/conf").String()
	yarnNodeManagerURL = kingpin.Flag("yarn.nodemanager.url", "The local NodeManager's web base URL (http://127.0.0.1:8042); empty takes it from yarn-site.xml.").
				Default("").String()
	yarnResourceManagerURL = kingpin.Flag("yarn.resourcemanager.url", "Comma-separated ResourceManager web base URLs, asked in turn for application names; empty takes them from yarn-site.xml (HA ids included).").
				Default("").String()
	yarnPollInterval = kingpin.Flag("yarn.poll-interval", "Time between two reads of the NodeManager's container list while no container is near its allocation.").
				Default("15s").Duration()
	yarnHurryInterval = kingpin.Flag("yarn.poll-interval.hurry", "Time between two reads of the container list while a container is near its allocation; shorter than the seconds the NodeManager lists a finished container.").
				Default("2s").Duration()
	yarnTimeout = kingpin.Flag("yarn.timeout", "Timeout of each NodeManager or ResourceManager request.").
			Default("5s").Duration()
	yarnRetention = kingpin.Flag("yarn.retention", "How long a finished container's exit status is kept after the NodeManager stops listing it.").
			Default("10m").Duration()
)

func init() {
	registerCollector("yarn", true, func(logger log.Logger, deps *Dependencies) (Collector, error) {
		s, err := deps.YARN()
		if err != nil {
			return nil, err
		}
		return NewYARNCollector(s), nil
	})
}

// yarnLocalHost replaces a wildcard host in yarn-site.xml's addresses: a
// NodeManager bound to 0.0.0.0 answers on loopback, and loopback needs no
// name lookup.
const yarnLocalHost = "127.0.0.1"

// YARNConfigFromFlags is the Source's configuration from the --yarn.*
// flags and yarn-site.xml; ok is false when this is no YARN node.
func YARNConfigFromFlags(logger log.Logger) (cfg yarn.Config, ok bool, err error) {
	conf, found, err := readYARNConf(*yarnConfDir)
	if err != nil {
		return yarn.Config{}, false, err
	}
	if !found && *yarnNodeManagerURL == "" {
		return yarn.Config{}, false, nil
	}
	cfg = yarn.Config{Conf: conf, Timeout: *yarnTimeout, Interval: *yarnPollInterval, HurryInterval: *yarnHurryInterval,
		Retention: *yarnRetention, NodeManagerURL: *yarnNodeManagerURL, ResourceManagerURLs: splitList(*yarnResourceManagerURL)}
	if cfg.NodeManagerURL == "" {
		cfg.NodeManagerURL = conf.NodeManagerURL(yarnLocalHost)
	}
	if len(cfg.ResourceManagerURLs) == 0 && found {
		cfg.ResourceManagerURLs = conf.ResourceManagerURLs(yarnLocalHost)
	}
	level.Info(logger).Log("msg", "YARN node", "nodemanager", cfg.NodeManagerURL, "resourcemanagers", strings.Join(cfg.ResourceManagerURLs, ","),
		"vmem_pmem_ratio", conf.VmemRatio, "pmem_check", conf.PmemCheck, "vmem_check", conf.VmemCheck, "monitor_enabled", conf.MonitorEnabled,
		"cgroups_memory", conf.CgroupsMemory, "memory_enforced", conf.MemoryEnforced, "elastic_control", conf.ElasticControl)
	return cfg, true, nil
}

// readYARNConf reads yarn-site.xml, and core-site.xml for the web
// services' authentication. A file that cannot be parsed is an error at
// start-up: the operator pointed --yarn.conf-dir at it.
func readYARNConf(dir string) (yarn.Conf, bool, error) {
	site, err := readConfFile(filepath.Join(dir, "yarn-site.xml"))
	if errors.Is(err, fs.ErrNotExist) {
		c, _ := yarn.FromProps(map[string]string{})
		return c, false, nil
	}
	if err != nil {
		return yarn.Conf{}, false, err
	}
	conf, err := yarn.ParseSiteXML(site)
	if err != nil {
		return yarn.Conf{}, false, fmt.Errorf("%s: %w", filepath.Join(dir, "yarn-site.xml"), err)
	}
	core, err := readConfFile(filepath.Join(dir, "core-site.xml"))
	if err == nil {
		if c, err := yarn.ParseSiteXML(core); err == nil {
			conf, err = conf.Merge(c)
			if err != nil {
				return yarn.Conf{}, false, err
			}
		}
	}
	return conf, true, nil
}

func readConfFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, yarn.MaxConfBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > yarn.MaxConfBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, yarn.MaxConfBytes)
	}
	return data, nil
}

// yarnCollector exports what the Source holds of the NodeManager: nothing
// here asks the network.
type yarnCollector struct {
	source *yarn.Source

	up, info, enforcement, checks, ratio, interval, containers, errors *prometheus.Desc
}

// NewYARNCollector returns a collector that reads s; nil s (not a YARN
// node) reports nothing.
func NewYARNCollector(s *yarn.Source) Collector {
	return &yarnCollector{
		source: s,
		up:     newDesc("yarn", "nodemanager_up", "Whether the last read of the local NodeManager's container list succeeded."),
		info: newDesc("yarn", "nodemanager_info",
			"The local NodeManager: its version (empty until read) and whether its monitor counts smaps-based RSS.", "version", "smaps_rss"),
		enforcement: newDesc("yarn", "memory_enforcement_info",
			"Who kills a container over its memory allocation, under the rule of the NodeManager's Hadoop line (2.x, 3.2, 3.3; unknown before its version is read) on its settings: enforcer (none, polling, kernel, elastic and their combinations, unknown), why (docs/yarn.md), whether the rule has YARN-11967 (yes, no, unknown).",
			"rule", "yarn_11967", "enforcer", "why"),
		checks: newDesc("yarn", "memory_check_enabled",
			"Whether the NodeManager's polling monitor kills containers over their physical (pmem) or virtual (vmem) memory limit, under the rule of its line on its settings; 0 when the rule is unknown.",
			"check"),
		ratio: newDesc("yarn", "vmem_pmem_ratio",
			"yarn.nodemanager.vmem-pmem-ratio: a container's virtual memory limit over its allocation."),
		interval: newDesc("yarn", "monitor_interval_seconds",
			"The NodeManager's monitor interval (yarn.nodemanager.container-monitor.interval-ms, else resource-monitor.interval-ms); 0 or less: the monitor is off."),
		containers: newDesc("yarn", "containers", "Containers the NodeManager lists, by state.", "state"),
		errors: newDesc("yarn", "request_errors_total",
			"Failed requests to the NodeManager or ResourceManager, by kind (down, timeout, http_<code>, too_large, parse, kerberos).",
			"target", "kind"),
	}
}

func (c *yarnCollector) Update(ch chan<- prometheus.Metric) error {
	if c.source == nil {
		return ErrNoData
	}
	n := c.source.Node()
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, boolToFloat(n.Reachable))
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, n.Version, fmt.Sprint(n.SmapsRSS))
	e := n.Enforcement
	ch <- prometheus.MustNewConstMetric(c.enforcement, prometheus.GaugeValue, 1, e.Rule, e.YARN11967, e.Enforcer(), e.Why)
	ch <- prometheus.MustNewConstMetric(c.checks, prometheus.GaugeValue, boolToFloat(e.PmemCheck), "pmem")
	ch <- prometheus.MustNewConstMetric(c.checks, prometheus.GaugeValue, boolToFloat(e.VmemCheck), "vmem")
	ch <- prometheus.MustNewConstMetric(c.ratio, prometheus.GaugeValue, n.VmemRatio)
	ch <- prometheus.MustNewConstMetric(c.interval, prometheus.GaugeValue, n.MonitorInterval.Seconds())

	states := map[string]int{}
	for _, ct := range c.source.Containers() {
		if !ct.Gone {
			states[ct.State]++
		}
	}
	// The NodeManager's states are a short fixed set; anything else it
	// sends is capped by the parser and counted as it comes.
	for _, s := range slices.Sorted(maps.Keys(states)) {
		ch <- prometheus.MustNewConstMetric(c.containers, prometheus.GaugeValue, float64(states[s]), s)
	}
	counts := map[[2]string]uint64{}
	for _, e := range c.source.Errors() {
		counts[[2]string{e.Target, e.Kind}] = e.Count
	}
	for _, target := range []string{yarn.TargetNodeManager, yarn.TargetResourceManager} {
		for _, kind := range yarn.ErrorKinds {
			ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(counts[[2]string{target, kind}]), target, kind)
		}
	}
	return nil
}
