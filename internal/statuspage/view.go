package statuspage

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// page is what the template reads: every figure already formatted, so the
// template only places strings (html/template escapes each one) and the
// formatting rules live in Go, where they are tested.
type page struct {
	Version, Generated, MetricsPath, DocsURL string

	Machine        []field // empty when unknown
	MachineMissing string  // why there is no machine section
	Notices        []string

	Summary       string
	JVMsSampled   string
	JVMs          []jvmRow
	JVMsDropped   int
	AnyNoCounters bool // a row draws resident memory instead of a budget

	KillsFollowed bool
	Kills         []killRow
	ExitsCounted  bool
	Exits         []exitRow
}

type field struct{ Name, Value string }

type jvmRow struct {
	PID, Role, AppID, ExecutorID, Where, MainClass string
	MainShort                                      string // the class's simple name
	NoCounters                                     string // why there are no heap figures; empty when there are
	HeapUsed, HeapCommitted, HeapMax               string
	NonHeap                                        string
	RSSJVM, RSSPython, RSSOther                    string
	Limit                                          string
	// Pressure is the container's stall, empty without PSI; Pressed when
	// it is enough to slow the executor.
	Pressure string
	Pressed  bool
	// Peaks sets each Spark setting beside the peak it must hold.
	Peaks []field
	Bar   bar
}

// bar is the memory budget of one JVM drawn to scale: heap max, non-heap
// and the tree's other processes side by side against the container limit.
// Widths are percentages of the larger of the sum and the limit, so a sum
// past the limit shows as a bar that crosses the limit's mark.
type bar struct {
	Heap, NonHeap, Children float64 // widths, percent
	RSS                     float64 // width of the resident memory, when the heap is unknown
	Limit                   float64 // the limit's mark, percent; 0 when unlimited
	Class                   string  // fits, tight, over, unlimited
	Verdict, Title          string
}

type killRow struct {
	Time, Age, Victim, Cause, Region, Constraint, Reason, Advice string
	Figures                                                      []field
}

type exitRow struct {
	Time, Age, Victim, Reason, Detail string
}

// tightShare: a budget above this share of the limit is drawn as tight.
const tightShare = 0.9

func newPage(s *Snapshot) page {
	p := page{
		Version:       s.Version,
		Generated:     formatTime(s.Time),
		MetricsPath:   s.MetricsPath,
		DocsURL:       DocsURL,
		JVMsDropped:   s.JVMsDropped,
		KillsFollowed: s.KillsFollowed,
		ExitsCounted:  s.ExitsCounted,
		JVMs:          make([]jvmRow, 0, len(s.JVMs)),
	}
	if p.MetricsPath == "" {
		p.MetricsPath = "/metrics"
	}
	p.machine(s)
	if !s.JVMsSampled.IsZero() {
		p.JVMsSampled = formatTime(s.JVMsSampled) + " (" + age(s.Time, s.JVMsSampled) + ")"
	}
	over := 0
	for _, i := range jvmOrder(s.JVMs) {
		row := newJVMRow(&s.JVMs[i])
		if row.Bar.Class == "over" {
			over++
		}
		p.AnyNoCounters = p.AnyNoCounters || row.NoCounters != ""
		p.JVMs = append(p.JVMs, row)
	}
	for i := range s.Kills {
		p.Kills = append(p.Kills, newKillRow(s.Time, &s.Kills[i]))
	}
	for i := range s.Exits {
		e := &s.Exits[i]
		p.Exits = append(p.Exits, exitRow{Time: formatTime(e.Time), Age: age(s.Time, e.Time),
			Victim: victim(&e.Identity, ""), Reason: e.Reason, Detail: e.Detail})
	}
	p.Summary = fmt.Sprintf("%s, %d that cannot fit its container; %s",
		plural(len(s.JVMs), "JVM"), over, plural(len(s.Kills), "recent OOM kill"))
	return p
}

func (p *page) machine(s *Snapshot) {
	m := s.Machine
	if m == nil {
		p.MachineMissing = "Not known yet: the cloud collector is disabled or has not finished its first lookup."
		return
	}
	for _, f := range []field{
		{"Provider", m.Provider}, {"Platform", m.Platform}, {"Instance type", m.InstanceType},
		{"Lifecycle", m.Lifecycle}, {"Region", m.Region}, {"Zone", m.Zone}, {"Instance id", m.InstanceID},
		{"Node", m.Node}, {"Node pool", m.NodePool}, {"Source", m.Source},
	} {
		if f.Value != "" {
			p.Machine = append(p.Machine, f)
		}
	}
	if !m.LastRefresh.IsZero() {
		p.Machine = append(p.Machine, field{"Refreshed", formatTime(m.LastRefresh) + " (" + age(s.Time, m.LastRefresh) + ")"})
	}
	for _, n := range m.Notices {
		if !n.Pending {
			continue
		}
		text := n.Event + " pending"
		if !n.Time.IsZero() {
			text += ", at " + formatTime(n.Time)
		}
		p.Notices = append(p.Notices, text)
	}
}

// jvmOrder lists drivers, then executors, then other JVMs; within a role by
// application, then executor id as a number, then pid.
func jvmOrder(jvms []JVM) []int {
	rank := func(role string) int {
		switch role {
		case "driver":
			return 0
		case "executor":
			return 1
		}
		return 2
	}
	idx := make([]int, len(jvms))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := &jvms[a], &jvms[b]
		if c := cmp.Compare(rank(x.Role), rank(y.Role)); c != 0 {
			return c
		}
		if c := cmp.Compare(x.AppID, y.AppID); c != 0 {
			return c
		}
		xe, xerr := strconv.Atoi(x.ExecutorID)
		ye, yerr := strconv.Atoi(y.ExecutorID)
		if xerr == nil && yerr == nil && xe != ye {
			return cmp.Compare(xe, ye)
		}
		if c := cmp.Compare(x.ExecutorID, y.ExecutorID); c != 0 {
			return c
		}
		return cmp.Compare(x.PID, y.PID)
	})
	return idx
}

// pressedShare is the share of time stalled on memory (PSI some avg10,
// percent) from which the page marks a container: the kernel's reclaim
// then costs the executor a tenth of its time, the share the exporter's
// own sampler treats as a container nearing its limit.
const pressedShare = 10

func newJVMRow(j *JVM) jvmRow {
	row := jvmRow{
		PID: strconv.Itoa(j.PID), Role: j.Role, AppID: j.AppID, ExecutorID: j.ExecutorID,
		Where: where(&j.Identity), MainClass: j.MainClass, MainShort: j.MainClass[strings.LastIndexByte(j.MainClass, '.')+1:],
		RSSJVM: formatBytes(j.RSSJVM), RSSPython: formatBytes(j.RSSPython), RSSOther: formatBytes(j.RSSOther),
		Limit: "unlimited",
	}
	if j.ContainerLimit > 0 {
		row.Limit = formatBytes(j.ContainerLimit)
	}
	row.Peaks = peakFields(j)
	if p := j.ContainerPressure; p != nil {
		row.Pressure = fmt.Sprintf("stall some %.1f%% full %.1f%%", p.SomeAvg10, p.FullAvg10)
		row.Pressed = p.SomeAvg10 >= pressedShare
	}
	if noCounters(j) {
		row.NoCounters = "no hsperfdata: " + j.Counters
		row.HeapUsed, row.HeapCommitted, row.HeapMax, row.NonHeap = "n/a", "n/a", "n/a", "n/a"
		row.Bar = newRSSBar(&j.Memory)
		return row
	}
	row.HeapUsed, row.HeapCommitted, row.HeapMax = formatBytes(j.HeapUsed), formatBytes(j.HeapCommitted), maxBytes(j.HeapMax)
	row.NonHeap = formatBytes(j.NonHeapUsed)
	if j.NonHeapCommitted > 0 {
		row.NonHeap += " / " + formatBytes(j.NonHeapCommitted)
	}
	row.Bar = newBar(&j.Memory)
	return row
}

// peakFields pairs what each Spark setting buys with the JVM's peak of
// what it must hold: the heap max with the live data, the room the limit
// leaves beside the heap with the non-heap and Python memory, the limit
// with the container's peak. A peak not known is left out.
func peakFields(j *JVM) []field {
	var out []field
	add := func(name string, setting, peak uint64, of string) {
		if peak == 0 {
			return
		}
		v := formatBytes(peak)
		if setting > 0 {
			v += " of " + formatBytes(setting) + " " + of
		}
		out = append(out, field{Name: name, Value: v})
	}
	var room uint64
	if j.ContainerLimit > j.HeapMax && j.HeapMax > 0 {
		room = j.ContainerLimit - j.HeapMax
	}
	add("live heap", j.HeapMax, j.Peaks.HeapLive, "heap max")
	if j.Peaks.Python > 0 {
		add("non-heap + python", room, j.Peaks.NonHeap+j.Peaks.Python, "overhead")
	} else {
		add("non-heap", room, j.Peaks.NonHeap, "overhead")
	}
	add("container", j.ContainerLimit, j.Peaks.Container, "limit")
	return out
}

// newBar draws the budget: what the JVM may grow to (heap max, or
// committed heap when there is no max), the non-heap memory it has
// committed, and the resident memory of the other processes in its tree
// (PySpark workers), against the container limit.
func newBar(m *Memory) bar {
	heap := m.HeapMax
	if heap == 0 {
		heap = m.HeapCommitted
	}
	nonHeap := max(m.NonHeapCommitted, m.NonHeapUsed)
	children := m.RSSPython + m.RSSOther
	sum := heap + nonHeap + children
	scale := float64(max(sum, m.ContainerLimit))
	b := bar{}
	if scale == 0 {
		b.Class, b.Verdict = "unlimited", "no figures"
		return b
	}
	b.Heap = percent(heap, scale)
	b.NonHeap = percent(nonHeap, scale)
	b.Children = percent(children, scale)
	budget := fmt.Sprintf("heap max %s + non-heap %s + other processes %s = %s",
		formatBytes(heap), formatBytes(nonHeap), formatBytes(children), formatBytes(sum))
	switch {
	case m.ContainerLimit == 0:
		b.Class, b.Verdict = "unlimited", "no limit"
		b.Title = budget + ", no container limit"
		return b
	case sum > m.ContainerLimit:
		b.Class = "over"
		b.Verdict = "does not fit: " + formatBytes(sum-m.ContainerLimit) + " over"
	case float64(sum) > tightShare*float64(m.ContainerLimit):
		b.Class, b.Verdict = "tight", "tight: "+formatBytes(m.ContainerLimit-sum)+" left"
	default:
		b.Class, b.Verdict = "fits", "fits: "+formatBytes(m.ContainerLimit-sum)+" left"
	}
	b.Limit = percent(m.ContainerLimit, scale)
	b.Title = budget + " against a limit of " + formatBytes(m.ContainerLimit)
	return b
}

// noCounters: the JVM publishes no hsperfdata, so its heap is unknown. An
// empty Counters is taken as counters present (a snapshot from before the
// field).
func noCounters(j *JVM) bool { return j.Counters != "" && j.Counters != "hsperfdata" }

// newRSSBar draws, for a JVM without heap figures, what it holds now —
// the process tree's resident memory — against the limit: what it may
// grow to is unknown.
func newRSSBar(m *Memory) bar {
	rss := m.RSSJVM + m.RSSPython + m.RSSOther
	scale := float64(max(rss, m.ContainerLimit))
	b := bar{Class: "unlimited", Verdict: "heap unknown"}
	if scale == 0 {
		return b
	}
	b.RSS = percent(rss, scale)
	b.Title = "resident memory of the process tree " + formatBytes(rss) + "; no heap figures"
	if m.ContainerLimit > 0 {
		b.Limit = percent(m.ContainerLimit, scale)
		b.Verdict = "heap unknown; resident " + formatBytes(rss) + " of " + formatBytes(m.ContainerLimit)
		b.Title += ", against a limit of " + formatBytes(m.ContainerLimit)
	}
	return b
}

func newKillRow(now time.Time, k *Kill) killRow {
	r := killRow{
		Time: formatTime(k.Time), Age: age(now, k.Time),
		Victim: fmt.Sprintf("process %d (%s)", k.PID, k.Task),
		Cause:  k.Cause, Region: k.Region, Constraint: k.Constraint, Reason: k.Reason, Advice: k.Advice,
	}
	switch {
	case k.Victim != nil && k.Victim.PID != k.PID:
		// A process killed in the executor's cgroup, the JVM alive.
		r.Victim = fmt.Sprintf("process %d (%s) of %s", k.PID, k.Task, victim(k.Victim, ""))
	case k.Victim != nil:
		r.Victim = victim(k.Victim, k.Task)
	default:
		if w := where(&Identity{Namespace: k.Namespace, Pod: k.Pod}); w != "" {
			r.Victim += " in " + w
		}
	}
	if k.KilledAnonRSS > 0 {
		r.Figures = append(r.Figures, field{"anon RSS at the kill", formatBytes(k.KilledAnonRSS)})
	}
	if s := k.LastSample; s != nil {
		limit := "unlimited"
		if s.ContainerLimit > 0 {
			limit = formatBytes(s.ContainerLimit)
		}
		r.Figures = append(r.Figures,
			field{"heap used / committed / max", formatBytes(s.HeapUsed) + " / " + formatBytes(s.HeapCommitted) + " / " + maxBytes(s.HeapMax)},
			field{"non-heap committed", formatBytes(s.NonHeapCommitted)},
			field{"RSS jvm / python / other", formatBytes(s.RSSJVM) + " / " + formatBytes(s.RSSPython) + " / " + formatBytes(s.RSSOther)},
			field{"container usage / limit", formatBytes(s.ContainerUsage) + " / " + limit},
		)
		if !s.Time.IsZero() && !k.Time.IsZero() {
			r.Figures = append(r.Figures, field{"sampled", k.Time.Sub(s.Time).Round(100*time.Millisecond).String() + " before the kill was read"})
		}
	}
	return r
}

// victim names a JVM the way the exporter's log does.
func victim(id *Identity, task string) string {
	var s string
	switch {
	case id.Role == "executor":
		s = fmt.Sprintf("Spark executor %s of %s (pid %d)", id.ExecutorID, id.AppID, id.PID)
	case id.Role == "driver":
		s = fmt.Sprintf("Spark driver of %s (pid %d)", id.AppID, id.PID)
	case task != "":
		s = fmt.Sprintf("JVM pid %d (%s)", id.PID, task)
	default:
		s = fmt.Sprintf("JVM pid %d", id.PID)
	}
	if w := where(id); w != "" {
		s += " in " + w
	}
	return s
}

func where(id *Identity) string {
	switch {
	case id.Namespace != "" && id.Pod != "":
		return id.Namespace + "/" + id.Pod
	default:
		return id.Pod
	}
}

func percent(v uint64, scale float64) float64 {
	// One decimal keeps the HTML short and stable for the golden file.
	return float64(int(1000*float64(v)/scale+0.5)) / 10
}

// formatBytes writes a byte count in binary units, three significant
// figures at most: 0 B, 512 KiB, 1.5 GiB.
func formatBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	prec := 0
	if v < 10 {
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[u:u+1] + "iB"
}

// maxBytes is formatBytes for a maximum, where 0 means "not set".
func maxBytes(n uint64) string {
	if n == 0 {
		return "none"
	}
	return formatBytes(n)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// age says how long before now t was, to the second.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "in " + (-d).String()
	}
	return d.String() + " ago"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
