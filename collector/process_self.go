package collector

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// ProcessCollectorOpts are the options of client_golang's
// collectors.ProcessCollectorOpts that the exporter can use: its own
// process, no namespace.
type ProcessCollectorOpts struct {
	// ReportErrors sends a failed read as an invalid metric, which fails
	// the Gather; otherwise the families it would have given are left out
	// of the scrape, as client_golang does by default.
	ReportErrors bool
}

// ProcessCollector gives the exporter's own process_* families, the
// same names, help, types and values as client_golang's process
// collector on Linux, at a fraction of its cost per scrape. That one
// reads the whole of /proc/stat (every CPU's line and the interrupt
// counts) for the boot time, parses /proc/self/stat with fmt.Fscan, and
// parses /proc/self/limits and /proc/self/net/netstat into structures of
// every field, each file opened anew. This one takes the start time once,
// the limits from getrlimit(2), and rereads stat and netstat through kept
// descriptors with parsers of only the fields it uses. Those two
// descriptors count in process_open_fds.
type ProcessCollector struct {
	reportErrors bool
	pageSize     int64
	fdDir        string
	fdDirIsProc  bool // the fd directory's size is its count of entries
	startTime    float64

	mu      sync.Mutex // the kept files' buffers, parsed under it
	stat    *procmem.KeptFile
	netstat *procmem.KeptFile

	cpuTotal, openFDs, maxFDs, vsize, maxVsize, rss, startTimeDesc, inBytes, outBytes *prometheus.Desc
}

// NewProcessCollector reads the exporter's own process through
// <procfs>/self. It fails when that process's stat or the boot time cannot
// be read, which client_golang's collector would fail at every scrape.
func NewProcessCollector(paths Paths, opts ProcessCollectorOpts) (*ProcessCollector, error) {
	c := &ProcessCollector{
		reportErrors: opts.ReportErrors,
		pageSize:     int64(os.Getpagesize()),
		fdDir:        paths.Proc("self", "fd"),
		stat:         procmem.NewKeptFile(paths.Proc("self", "stat")),
		netstat:      procmem.NewKeptFile(paths.Proc("self", "net", "netstat")),
		// As client_golang's process_collector.go has them.
		cpuTotal:      prometheus.NewDesc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", nil, nil),
		openFDs:       prometheus.NewDesc("process_open_fds", "Number of open file descriptors.", nil, nil),
		maxFDs:        prometheus.NewDesc("process_max_fds", "Maximum number of open file descriptors.", nil, nil),
		vsize:         prometheus.NewDesc("process_virtual_memory_bytes", "Virtual memory size in bytes.", nil, nil),
		maxVsize:      prometheus.NewDesc("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", nil, nil),
		rss:           prometheus.NewDesc("process_resident_memory_bytes", "Resident memory size in bytes.", nil, nil),
		startTimeDesc: prometheus.NewDesc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", nil, nil),
		inBytes:       prometheus.NewDesc("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", nil, nil),
		outBytes:      prometheus.NewDesc("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", nil, nil),
	}
	// procfs counts a directory's entries by its size only on a real
	// procfs (Linux ≥ 6.2 gives /proc/<pid>/fd the count as its size);
	// anywhere else, a test's fixture say, it lists them.
	var sfs unix.Statfs_t
	if err := unix.Statfs(paths.ProcFS, &sfs); err != nil {
		return nil, fmt.Errorf("process collector: %w", err)
	}
	c.fdDirIsProc = sfs.Type == unix.PROC_SUPER_MAGIC

	// The start time is the boot time plus the ticks from boot to the
	// process's start, so /proc/stat, costly to make on a machine of many
	// CPUs, is read once. The ticks are fixed; btime moves only when the
	// wall clock is stepped (it is the wall time of boot), and then
	// client_golang's start time moved with it, which no process's start
	// should: this one keeps the time as it stood at construction.
	fs, err := procfs.NewFS(paths.ProcFS)
	if err != nil {
		return nil, fmt.Errorf("process collector: %w", err)
	}
	kstat, err := fs.Stat()
	if err != nil {
		return nil, fmt.Errorf("process collector: boot time: %w", err)
	}
	if kstat.BootTime == 0 {
		return nil, errors.New("process collector: boot time: no btime in stat")
	}
	s, err := c.readStat()
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("process collector: %w", err)
	}
	c.startTime = float64(kstat.BootTime) + float64(s.StartTicks)/procmem.UserHZ
	return c, nil
}

// Close releases the kept descriptors. The collector reads no more after
// it: a Collect would open them again.
func (c *ProcessCollector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.stat.Close(), c.netstat.Close())
}

// Describe sends the nine descriptions, as client_golang's does on Linux.
func (c *ProcessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cpuTotal
	ch <- c.openFDs
	ch <- c.maxFDs
	ch <- c.vsize
	ch <- c.maxVsize
	ch <- c.rss
	ch <- c.startTimeDesc
	ch <- c.inBytes
	ch <- c.outBytes
}

// Collect reads the process in the order and with the grouping of
// client_golang's processCollect: a failed stat or netstat read loses the
// families it gives, a failed fd count its one. The start time, known
// since construction, is sent whatever stat reads.
func (c *ProcessCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s, statErr := c.readStat()
	in, out, netErr := c.readNetstat()
	c.mu.Unlock()

	if statErr == nil {
		ch <- prometheus.MustNewConstMetric(c.cpuTotal, prometheus.CounterValue, s.CPUSeconds())
		ch <- prometheus.MustNewConstMetric(c.vsize, prometheus.GaugeValue, float64(s.VSize))
		ch <- prometheus.MustNewConstMetric(c.rss, prometheus.GaugeValue, float64(s.RSSPages*c.pageSize))
	} else {
		c.reportError(ch, nil, statErr)
	}
	ch <- prometheus.MustNewConstMetric(c.startTimeDesc, prometheus.GaugeValue, c.startTime)

	if n, err := c.countFDs(); err == nil {
		ch <- prometheus.MustNewConstMetric(c.openFDs, prometheus.GaugeValue, float64(n))
	} else {
		c.reportError(ch, c.openFDs, err)
	}

	// procfs's Limits reads the soft limits, "unlimited" as
	// 18446744073709551615: RLIM_INFINITY, as getrlimit gives it.
	var files, as unix.Rlimit
	err := unix.Getrlimit(unix.RLIMIT_NOFILE, &files)
	if err == nil {
		err = unix.Getrlimit(unix.RLIMIT_AS, &as)
	}
	if err == nil {
		ch <- prometheus.MustNewConstMetric(c.maxFDs, prometheus.GaugeValue, float64(files.Cur))
		ch <- prometheus.MustNewConstMetric(c.maxVsize, prometheus.GaugeValue, float64(as.Cur))
	} else {
		c.reportError(ch, nil, fmt.Errorf("getrlimit: %w", err))
	}

	if netErr == nil {
		ch <- prometheus.MustNewConstMetric(c.inBytes, prometheus.CounterValue, float64(in))
		ch <- prometheus.MustNewConstMetric(c.outBytes, prometheus.CounterValue, float64(out))
	} else {
		c.reportError(ch, nil, netErr)
	}
}

// readStat and readNetstat are called with mu held once c is shared.
func (c *ProcessCollector) readStat() (procmem.SelfStat, error) {
	data, err := c.stat.Read()
	if err != nil {
		return procmem.SelfStat{}, err
	}
	return procmem.ParseSelfStat(data)
}

func (c *ProcessCollector) readNetstat() (in, out uint64, err error) {
	data, err := c.netstat.Read()
	if err != nil {
		return 0, 0, err
	}
	return procmem.ParseNetstatOctets(data)
}

// countFDs is procfs's Proc.FileDescriptorsLen: the directory's size on
// procfs when the kernel gives it, a listing otherwise.
func (c *ProcessCollector) countFDs() (int, error) {
	if c.fdDirIsProc {
		var st unix.Stat_t
		if err := unix.Stat(c.fdDir, &st); err != nil {
			return 0, &os.PathError{Op: "stat", Path: c.fdDir, Err: err}
		}
		if st.Size > 0 {
			return int(st.Size), nil
		}
	}
	d, err := os.Open(c.fdDir)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	return len(names), nil
}

// reportError is client_golang's processCollector.reportError.
func (c *ProcessCollector) reportError(ch chan<- prometheus.Metric, desc *prometheus.Desc, err error) {
	if !c.reportErrors {
		return
	}
	if desc == nil {
		desc = prometheus.NewInvalidDesc(err)
	}
	ch <- prometheus.NewInvalidMetric(desc, err)
}
