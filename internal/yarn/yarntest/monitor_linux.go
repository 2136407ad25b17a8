package yarntest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Exit statuses the monitor records (ContainerExitStatus).
const (
	ExitKilledVmem = -103
	ExitKilledPmem = -104
)

// Monitor enforces containers' allocations on real processes by the
// NodeManager's polling rule:
//
//   - every Interval, it sums the rss pages (physical) and vsize (virtual)
//     of /proc/<pid>/stat over the container's process tree;
//   - a tree is over a limit when its total is more than twice the limit,
//     or when the processes that were already there at the previous pass
//     ("older than one iteration") are over it;
//   - the virtual limit (allocation × VmemRatio) is checked before the
//     physical one (the allocation);
//   - over a limit, it sends SIGTERM to the container's process group and
//     SIGKILL 250 ms later, and the NodeManager lists the container
//     KILLING, then DONE, with exit status -103 or -104 and Hadoop 3.3's
//     diagnostics: the stamped message with long2String sizes and the
//     dump of the process tree, one line per process.
type Monitor struct {
	Server    *Server
	Interval  time.Duration // 3 s by default, as yarn.nodemanager.container-monitor.interval-ms
	VmemRatio float64       // 2.1 by default
	PmemCheck bool
	VmemCheck bool
	// Strict is cgroup enforcement (strict or elastic): Hadoop 3.2+ then
	// switches the polling check off, and the passes only measure.
	Strict bool

	mu      sync.Mutex
	watched map[string]*watched
	stop    chan struct{}
	done    chan struct{}
}

type watched struct {
	pid       int // the container's root process, leader of its process group
	limit     uint64
	ages      map[int]int // pid → passes it has been seen
	LastRSS   uint64
	LastVsize uint64
}

// NewMonitor returns a monitor with the NodeManager's defaults: a pass
// every 3 s, ratio 2.1, both checks on. Change the fields before Start.
func NewMonitor(s *Server) *Monitor {
	return &Monitor{Server: s, Interval: 3 * time.Second, VmemRatio: 2.1, PmemCheck: true, VmemCheck: true,
		watched: map[string]*watched{}}
}

// Watch launches the container on the NodeManager and monitors the process
// tree rooted at pid (a process group leader) against mb MiB.
func (m *Monitor) Watch(id string, pid int, mb int64) {
	m.Server.Launch(id, mb)
	m.mu.Lock()
	m.watched[id] = &watched{pid: pid, limit: uint64(mb) << 20, ages: map[int]int{}}
	m.mu.Unlock()
}

// Start begins the passes; Stop ends them.
func (m *Monitor) Start() {
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.Interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.Pass()
			}
		}
	}()
}

// Stop ends the passes and waits for the last.
func (m *Monitor) Stop() {
	if m.stop != nil {
		close(m.stop)
		<-m.done
	}
}

// Last returns the tree's RSS and address space at the last pass.
func (m *Monitor) Last(id string) (rss, vsize uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.watched[id]; ok {
		return w.LastRSS, w.LastVsize
	}
	return 0, 0
}

// Pass is one monitoring pass over every watched container.
func (m *Monitor) Pass() {
	m.mu.Lock()
	defer m.mu.Unlock()
	page := uint64(os.Getpagesize())
	for id, w := range m.watched {
		tree := processTree(w.pid)
		if len(tree) == 0 {
			delete(m.watched, id) // ended by itself: whoever started it reports
			continue
		}
		var rss, vsize, agedRSS, agedVsize uint64
		seen := map[int]bool{}
		for _, p := range tree {
			seen[p.pid] = true
			w.ages[p.pid]++
			rss += p.rssPages * page
			vsize += p.vsize
			if w.ages[p.pid] > 1 {
				agedRSS += p.rssPages * page
				agedVsize += p.vsize
			}
		}
		for pid := range w.ages {
			if !seen[pid] {
				delete(w.ages, pid)
			}
		}
		w.LastRSS, w.LastVsize = rss, vsize
		vlimit := uint64(float64(w.limit) * m.VmemRatio)
		switch {
		case m.Strict:
		case m.VmemCheck && over(vsize, agedVsize, vlimit):
			m.kill(id, w, ExitKilledVmem, "virtual", vsize-vlimit, rss, vsize, vlimit)
		case m.PmemCheck && over(rss, agedRSS, w.limit):
			m.kill(id, w, ExitKilledPmem, "physical", rss-w.limit, rss, vsize, vlimit)
		}
	}
}

// over is ContainersMonitorImpl's rule: twice the limit at once, or over
// it with processes older than one pass.
func over(current, aged, limit uint64) bool {
	return current > 2*limit || aged > limit
}

func (m *Monitor) kill(id string, w *watched, status int, kind string, delta, rss, vsize, vlimit uint64) {
	msg := fmt.Sprintf("Container [pid=%d,containerID=%s] is running %dB beyond the '%s' memory limit. ",
		w.pid, id, delta, strings.ToUpper(kind)) +
		"Current usage: " + fmt.Sprintf("%sB of %sB physical memory used; %sB of %sB virtual memory used",
		Long2String(rss), Long2String(w.limit), Long2String(vsize), Long2String(vlimit)) +
		". Killing container.\nDump of the process-tree for " + id + " :\n" + treeDump(w.pid)
	_ = syscall.Kill(-w.pid, syscall.SIGTERM)
	pid := w.pid
	go func() {
		time.Sleep(250 * time.Millisecond) // the NodeManager's sleep-delay-before-sigkill
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}()
	m.Server.Finish(id, status, stamped(msg, "Container killed on request. Exit code is 143", "Container exited with a non-zero exit code 143. "))
	delete(m.watched, id)
}

// Long2String is Hadoop's TraditionalBinaryPrefix.long2String(n, "", 1):
// "512", "2 G", "5.6 G" (the monitor appends the "B").
func Long2String(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10)
	}
	const symbols = "KMGTPE"
	i, unit := 0, uint64(1024)
	for i+1 < len(symbols) && n >= unit*1024 {
		i, unit = i+1, unit*1024
	}
	if n%unit == 0 {
		return fmt.Sprintf("%d %c", n/unit, symbols[i])
	}
	s := fmt.Sprintf("%.1f", float64(n)/float64(unit))
	if strings.HasPrefix(s, "1024") && i+1 < len(symbols) { // rounded up to the next prefix
		i, unit = i+1, unit*1024
		s = fmt.Sprintf("%.1f", float64(n)/float64(unit))
	}
	return s + " " + string(symbols[i])
}

// treeDump is ProcfsBasedProcessTree.getProcessTreeDump: a header, then
// one line per process of the tree.
func treeDump(root int) string {
	var b strings.Builder
	b.WriteString("\t|- PID PPID PGRPID SESSID CMD_NAME USER_MODE_TIME(MILLIS) SYSTEM_TIME(MILLIS) VMEM_USAGE(BYTES) RSSMEM_USAGE(PAGES) FULL_CMD_LINE\n")
	for _, p := range processTree(root) {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline")
		fmt.Fprintf(&b, "\t|- %d %d %d %d (%s) %d %d %d %d %s\n", p.pid, p.ppid, p.pgrp, p.session, p.comm, p.utime*10, p.stime*10,
			p.vsize, p.rssPages, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return b.String()
}

type proc struct {
	pid, ppid, pgrp, session int
	comm                     string
	utime, stime             uint64 // clock ticks
	rssPages                 uint64
	vsize                    uint64
}

// processTree is the process rooted at root and its descendants, as
// ProcfsBasedProcessTree walks /proc by parent pid.
func processTree(root int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	all := map[int]proc{}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(s[closing+1:])
		// After the command: state(0) ppid(1) pgrp(2) session(3) …
		// utime(11) stime(12) … vsize(20) rss(21).
		if len(f) < 22 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p := proc{pid: pid, ppid: ppid, comm: s[open+1 : closing]}
		p.pgrp, _ = strconv.Atoi(f[2])
		p.session, _ = strconv.Atoi(f[3])
		p.utime, _ = strconv.ParseUint(f[11], 10, 64)
		p.stime, _ = strconv.ParseUint(f[12], 10, 64)
		p.vsize, _ = strconv.ParseUint(f[20], 10, 64)
		p.rssPages, _ = strconv.ParseUint(f[21], 10, 64)
		all[pid] = p
		children[ppid] = append(children[ppid], pid)
	}
	if _, ok := all[root]; !ok {
		return nil
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, all[pid])
		queue = append(queue, children[pid]...)
	}
	return out
}
