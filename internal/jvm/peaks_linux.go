package jvm

import (
	"time"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// residentPeakBackstop is the longest a JVM's VmHWM goes unread. Between,
// update reads it only when it can have moved (statusDue), as
// /proc/<pid>/status is expensive on the kernel's side. Those signals miss
// some spikes: a container's peak is not always known, and does not rise
// with a spike of this JVM when it was set higher before (by the other
// processes in it, or its page cache); the resident size is only sampled.
// Such a spike is still seen within this time while the JVM lives: the
// kernel keeps VmHWM, so reading it late loses nothing until the process
// ends.
const residentPeakBackstop = 5 * time.Minute

// peakMark carries a JVM's peaks from read to read, in its record.
type peakMark struct {
	peaks    Peaks
	statusAt time.Time // when VmHWM was last read; zero before the first read
	// The container's peak as the reading that last read VmHWM saw it,
	// and whether it saw one.
	container    uint64
	hasContainer bool
}

// update sets j.Peaks to the peaks so far, this read's included.
func (r *reader) updatePeaks(j *JVM, start time.Time, now time.Time) {
	m := &r.recs.of(j.PID, start).peaks
	read := readPeaks(j)
	hasContainer := j.HasCgroup && j.Cgroup.HasPeak
	if m.statusDue(read.Resident, read.Container, hasContainer, now) {
		if hwm, ok := r.residentPeak(j.PID); ok {
			read.Resident = max(read.Resident, hwm)
			m.statusAt, m.container, m.hasContainer = now, read.Container, hasContainer
		}
	}
	m.peaks.merge(read)
	j.Peaks = m.peaks
}

// statusDue says whether VmHWM can have moved since it was last read, given
// this reading's resident size and container peak. The container's peak
// is read before VmHWM, so a rise between the two shows at the next
// reading: a needless read, never a missed one.
func (m *peakMark) statusDue(resident, container uint64, hasContainer bool, now time.Time) bool {
	switch {
	case m.statusAt.IsZero():
		// The first reading of the process: the peak of its life so far.
		return true
	case resident >= m.peaks.Resident+peakMoveBytes:
		// VmHWM is at least this, and may be more: whatever it rose
		// through between readings.
		return true
	case hasContainer && (!m.hasContainer || container >= m.container+peakMoveBytes || container < m.container):
		// The container's peak moved: something in it spiked since, this
		// JVM maybe. It only rises, but for a reset (a write to it) or
		// a move to another cgroup; a read then takes the new figure as
		// the one to compare with.
		return true
	}
	return now.Sub(m.statusAt) >= residentPeakBackstop
}

// peakMoveBytes is the least rise that makes VmHWM worth reading before
// the backstop. An idle JVM's resident memory creeps up a page at a time,
// and a container's peak with its page cache; a spike that matters to a
// memory setting is larger. A smaller rise of the JVM's resident memory
// still raises the peak as sampled.
const peakMoveBytes = 8 << 20

// residentPeak reads the process's VmHWM; a process gone or a kernel
// without the field leaves the sampled figure.
func (r *reader) residentPeak(pid int) (uint64, bool) {
	hwm, err := r.status.ResidentPeak(pid)
	if err != nil || hwm == 0 {
		return 0, false
	}
	return hwm, true
}

// readPeaks is what one read of a JVM shows of its peaks, but for the
// kernel's resident peak, which is read apart (updatePeaks), and the heap's
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
