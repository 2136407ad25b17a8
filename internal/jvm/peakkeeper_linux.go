package jvm

import (
	"time"

	"github.com/prometheus/procfs"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// residentPeakEvery is how often a JVM's VmHWM is read from
// /proc/<pid>/status, whose kernel side costs tens of microseconds. The
// kernel keeps the peak, so reading it late loses nothing while the JVM
// lives; a resident size above the last VmHWM read raises it at once.
const residentPeakEvery = 30 * time.Second

// peakKeeper carries each JVM's peaks from read to read.
type peakKeeper struct {
	proc  procfs.FS
	byPID map[int]*peakMark
}

type peakMark struct {
	start    time.Time // the process's start: a reused pid starts afresh
	peaks    Peaks
	statusAt time.Time // when VmHWM was last read
}

func newPeakKeeper(procPath string) *peakKeeper {
	// NewTracker has checked procPath; a bad one fails every read here.
	fs, _ := procfs.NewFS(procPath)
	return &peakKeeper{proc: fs, byPID: map[int]*peakMark{}}
}

// update sets j.Peaks to the peaks so far, this read's included.
func (k *peakKeeper) update(j *JVM, start time.Time, now time.Time) {
	m := k.byPID[j.PID]
	if m == nil || !m.start.Equal(start) {
		m = &peakMark{start: start}
		k.byPID[j.PID] = m
	}
	m.peaks.merge(readPeaks(j))
	if now.Sub(m.statusAt) >= residentPeakEvery {
		if hwm, ok := k.residentPeak(j.PID); ok {
			m.peaks.Resident = max(m.peaks.Resident, hwm)
			m.statusAt = now
		}
	}
	j.Peaks = m.peaks
}

// residentPeak reads the process's VmHWM; a process gone or a kernel
// without the field leaves the sampled figure.
func (k *peakKeeper) residentPeak(pid int) (uint64, bool) {
	p, err := k.proc.Proc(pid)
	if err != nil {
		return 0, false
	}
	st, err := p.NewStatus()
	if err != nil || st.VmHWM == 0 {
		return 0, false
	}
	return st.VmHWM, true
}

// forget drops the processes the table no longer knows.
func (k *peakKeeper) forget(table *procmem.ProcessTable) {
	for pid, m := range k.byPID {
		if p, ok := table.Seen(pid); !ok || !p.StartTime.Equal(m.start) {
			delete(k.byPID, pid)
		}
	}
}

// readPeaks is what one read of a JVM shows of its peaks, but for the
// kernel's resident peak, which is read apart (peakKeeper), and the heap's
// live data, which needs the previous read (heapLive): the reader leaves
// it in j.Peaks.HeapLive.
func readPeaks(j *JVM) Peaks {
	p := Peaks{Python: j.RSSPython, Resident: j.RSSJVM, HeapLive: j.Peaks.HeapLive}
	if j.HasCgroup && j.Cgroup.HasPeak {
		p.Container = j.Cgroup.Peak
	}
	if j.Counters == CountersHsperf {
		// The committed heap is resident only once touched: a young
		// JVM's is not yet. The last breakdown says how much is.
		heap := j.Stats.HeapCommitted
		if j.Native != nil {
			if r := j.Native.Last.Regions[nativemem.Heap]; r > 0 {
				heap = min(heap, r)
			}
		}
		if rss := j.RSSJVM + j.RSSOther; rss > heap {
			p.NonHeap = rss - heap
		}
	}
	return p
}
