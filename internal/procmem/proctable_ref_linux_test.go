package procmem

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"
)

// NewProcessTable scans every process under fs once. Processes that exit
// during the scan, or whose stat cannot be read or parsed, are left out: one
// odd process must not cost the whole table. It fails only when /proc itself
// cannot be listed or /proc/stat has no boot time.
//
// It is the reference a ProcessWatch's table is held to, and the full scan
// whose cost the watch saves (BenchmarkScan).
func NewProcessTable(fs procfs.FS) (*ProcessTable, error) {
	all, err := fs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	boot, err := bootTime(fs)
	if err != nil {
		return nil, err
	}

	t := &ProcessTable{
		procs:    make(map[int]Process, len(all)),
		children: make(map[int][]int, len(all)/4),
		handles:  make(map[int]procfs.Proc, len(all)),
	}
	for _, p := range all {
		st, err := p.Stat()
		if err != nil {
			// Vanished (ENOENT/ESRCH) or unreadable: skip it either way.
			continue
		}
		rss := st.ResidentMemory()
		if rss < 0 {
			rss = 0
		}
		t.procs[p.PID] = Process{
			PID:       p.PID,
			PPID:      st.PPID,
			Comm:      st.Comm,
			RSS:       uint64(rss),
			VSize:     uint64(st.VSize),
			StartTime: boot.Add(time.Duration(st.Starttime) * (time.Second / userHZ)),

			KernelThread: st.Flags&pfKthread != 0,
		}
		t.handles[p.PID] = p
		if st.PPID != p.PID {
			t.children[st.PPID] = append(t.children[st.PPID], p.PID)
		}
	}
	return t, nil
}
