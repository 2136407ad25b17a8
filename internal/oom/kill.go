package oom

import "strings"

// Kill is one process killed by the kernel OOM killer, put together from
// the lines the kernel prints about it.
type Kill struct {
	PID        int
	Task       string
	Constraint string // CONSTRAINT_*; from the summary line, else judged from the scope
	OOMMemcg   string // the memcg whose limit was hit; empty for a global OOM or when unknown
	TaskMemcg  string // the victim's memcg when the summary line named it
	AnonRSSKiB uint64 // the victim's resident memory as the kernel counted it
	FileRSSKiB uint64
	// ShmemRSSKiB is shared memory and tmpfs pages mapped by the victim.
	ShmemRSSKiB uint64
	// Report is what the kernel's memcg report said the container held
	// when it hit its limit; Known false for a global OOM, a kernel that
	// prints no memory.stat, or a report of another group.
	Report Report
}

// Report is the part of a memcg OOM report that tells what filled the
// container: its usage and, from its memory.stat, bytes of each kind.
// cgroup v1 prints rss, cache and shmem (total_* for the group and its
// children) and the kmem line (the kernel's memory: thread stacks, page
// tables, slab); v2 prints anon, file, shmem and kernel_stack. A figure
// the report lacks is 0.
type Report struct {
	Known       bool
	Memcg       string
	Usage       uint64
	Anon        uint64 // v2 anon, v1 total_rss
	File        uint64 // v2 file, v1 total_cache (shmem included in both)
	Shmem       uint64 // v2 shmem, v1 total_shmem
	KernelStack uint64 // v2 kernel_stack
	Kmem        uint64 // v1 kmem usage
}

// add takes one line of the report.
func (r *Report) add(l Line) {
	switch l.Kind {
	case KindUsage:
		if l.Key == "memory" {
			*r = Report{Usage: l.Value}
		} else {
			r.Kmem = l.Value
		}
	case KindStatsHeader:
		r.Memcg, r.Known = l.Memcg, true
	case KindStat:
		if !r.Known {
			return
		}
		switch l.Key {
		case "anon", "total_rss":
			r.Anon = l.Value
		case "file", "total_cache":
			r.File = l.Value
		case "shmem", "total_shmem":
			r.Shmem = l.Value
		case "kernel_stack":
			r.KernelStack = l.Value
		}
	}
}

// Assembler turns the OOM killer's lines, in log order, into kills. The
// kernel prints, for one OOM: the summary "oom-kill:…" (4.19+) or the
// "Kill process … or sacrifice child" line (before 5.x), then one "Killed
// process" line per process it kills (several with memory.oom.group). A
// kill is counted on the Killed line, which every kernel prints, and takes
// its constraint and memcgs from what came before it. The zero value is
// ready to use; it is not safe for concurrent use.
type Assembler struct {
	summary Line   // the last summary line; Kind 0 before the first
	chosen  Line   // the last chosen line (4.x); Kind 0 before the first
	report  Report // the last memcg report, reset by its "memory: usage" line
}

// Add feeds one parsed line and returns the kill it completes, if any.
func (a *Assembler) Add(l Line) (Kill, bool) {
	switch l.Kind {
	case KindSummary:
		a.summary = l
		return Kill{}, false
	case KindChosen:
		a.chosen = l
		return Kill{}, false
	case KindUsage, KindStatsHeader, KindStat:
		a.report.add(l)
		return Kill{}, false
	case KindKilled:
	default:
		return Kill{}, false
	}
	k := Kill{
		PID: l.PID, Task: l.Task,
		AnonRSSKiB: l.AnonRSSKiB, FileRSSKiB: l.FileRSSKiB, ShmemRSSKiB: l.ShmemRSSKiB,
	}
	scope := l.Scope
	if scope == "" {
		// 4.x: the Killed line has no scope of its own; it may be a child
		// of the chosen process, still killed by the same OOM.
		scope = a.chosen.Scope
	}
	k.Constraint = constraintOfScope(scope)
	if a.summary.Kind == KindSummary && a.summary.PID == l.PID {
		k.Constraint = a.summary.Constraint
		k.OOMMemcg = a.summary.OOMMemcg
		k.TaskMemcg = a.summary.TaskMemcg
	} else if a.summary.Constraint == ConstraintMemcg && k.Constraint == ConstraintMemcg {
		// Another member of an oom.group memcg: same OOM, its own memcg
		// unknown.
		k.OOMMemcg = a.summary.OOMMemcg
	}
	// The report is this kill's when it is of the group whose limit was
	// hit: the kernel prints that group's stats.
	if a.report.Known && k.OOMMemcg != "" && a.report.Memcg == k.OOMMemcg {
		k.Report = a.report
	}
	return k, true
}

// constraintOfScope judges the constraint from the text before "Killed
// process" when no summary line names it: the memcg OOM says so, anything
// else is taken as the whole machine (cpuset and mempolicy OOMs, which
// print "Out of memory" too, are told apart only by the summary line).
func constraintOfScope(scope string) string {
	switch {
	case scope == "":
		return ""
	case strings.Contains(strings.ToLower(scope), "memory cgroup"):
		return ConstraintMemcg
	default:
		return ConstraintNone
	}
}
