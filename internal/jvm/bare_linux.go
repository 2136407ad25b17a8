package jvm

import (
	"errors"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// javaComm is the kernel's command name of a JVM started by the java
// launcher (Spark's scripts, YARN, the Kubernetes images all exec it).
const javaComm = "java"

// scanBare finds the JVMs that publish no hsperfdata — started with
// -XX:+PerfDisableSharedMem or -XX:-UsePerfData — among the processes of
// the table: a java command name and no hsperfdata file of their own
// (withFile). Finding them reads nothing (the command names the process
// table already knows); reading one costs its stat, tree and, once per
// process, its identity. They are added to
// view within the same cap as the others. Runs under refreshMu.
// It returns how many it read; those not due keep their reading (kept).
func (t *Tracker) scanBare(table *procmem.ProcessTable, withFile, read map[int]bool, kept map[int]JVM, cgroups map[string]procmem.CgroupMemory, view *View, now time.Time) int {
	fresh := 0
	for _, pid := range table.PIDs() {
		// Seen costs no read: the command name as last read, which the
		// table reads again while a process is young (an exec) and then
		// every few minutes. Process reads the few that pass.
		if p, ok := table.Seen(pid); !ok || p.Comm != javaComm || p.KernelThread || withFile[pid] || read[pid] {
			continue
		}
		if j, ok := kept[pid]; ok {
			read[pid] = true
			view.JVMs = append(view.JVMs, j)
			continue
		}
		p, ok := table.Process(pid)
		if !ok || p.Comm != javaComm {
			continue
		}
		if len(read) >= t.cfg.MaxProcesses {
			view.Dropped++
			continue
		}
		fresh++
		j, reason, err := t.readBare(p, table, cgroups, now)
		if err != nil {
			if reason != "" {
				t.countError(reason)
				t.logFailure(Candidate{PID: pid}, reason, err, now)
			}
			continue
		}
		read[pid] = true
		view.JVMs = append(view.JVMs, j)
	}
	return fresh
}

// readBare reads what does not need hsperfdata: identity, the process
// tree's resident memory, the memory cgroup.
func (t *Tracker) readBare(p procmem.Process, table *procmem.ProcessTable, cgroups map[string]procmem.CgroupMemory, now time.Time) (JVM, string, error) {
	if p.RSS == 0 {
		return JVM{}, "", errors.New("exiting")
	}
	id, err := t.identity(p)
	if err != nil {
		return JVM{}, classify(err), err
	}
	counters := id.noCounters
	if counters == "" {
		if now.Sub(p.StartTime) < startupGrace {
			// Its file is on its way: HotSpot creates it early in start-up.
			return JVM{}, "", errors.New("starting")
		}
		counters = CountersNoFile
	}
	rss := table.TreeRSS(p.PID)
	j := JVM{
		Sample: Sample{
			Identity: Identity{PID: p.PID, Role: id.cmd.Role, AppID: id.cmd.AppID, ExecutorID: id.cmd.ExecutorID},
			Time:     now,
			RSSJVM:   rss.JVM, RSSPython: rss.Python, RSSOther: rss.Other,
		},
		MainClass:    id.cmd.MainClass,
		Xmx:          id.cmd.Xmx,
		Pod:          id.pod,
		ProcessStart: p.StartTime,
		Counters:     counters,
	}
	t.readCgroup(&j, Candidate{PID: p.PID}, p, cgroups, now)
	t.observe(nil, p, id.euid, &j, gcMark{}, now)
	return j, "", nil
}
