package jvm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// peakReading is one reading of a JVM handed to reader.updatePeaks, and the
// VmHWM its fake /proc/<pid>/status shows at that moment.
type peakReading struct {
	after     time.Duration // since the first reading
	restarted bool          // another process took the pid
	rss       uint64        // RSSJVM
	container uint64        // the container's peak; 0: the reading has none
	hwm       uint64        // VmHWM in the status file; 0: no status file
	want      uint64        // Peaks.Resident after the update
}

// TestPeakKeeperReadsVmHWMOnlyWhenItCanHaveMoved changes the fake VmHWM
// between readings: a reading that does not read it keeps the figure of
// the last one that did.
func TestPeakKeeperReadsVmHWMOnlyWhenItCanHaveMoved(t *testing.T) {
	const pid = 4242
	// The first reading: resident 300 MiB, VmHWM 500 MiB, the container's
	// peak 1 GiB. Then VmHWM shows 800 MiB.
	first := peakReading{rss: 300 * mib, container: 1024 * mib, hwm: 500 * mib, want: 500 * mib}
	quiet := func(after time.Duration, want uint64) peakReading {
		return peakReading{after: after, rss: 300 * mib, container: 1024 * mib, hwm: 800 * mib, want: want}
	}
	for _, tc := range []struct {
		name     string
		readings []peakReading
	}{
		{"the first reading reads it", []peakReading{first}},
		{"nothing moved within the backstop: not read", []peakReading{first,
			quiet(15*time.Second, 500*mib),
			quiet(residentPeakBackstop-time.Second, 500*mib)}},
		{"the backstop reads it", []peakReading{first,
			quiet(15*time.Second, 500*mib),
			quiet(residentPeakBackstop, 800*mib)}},
		{"the container's peak rose: read, and the backstop counts from then", []peakReading{first,
			{after: 15 * time.Second, rss: 300 * mib, container: 1032 * mib, hwm: 800 * mib, want: 800 * mib},
			{after: 30 * time.Second, rss: 300 * mib, container: 1032 * mib, hwm: 900 * mib, want: 800 * mib},
			{after: residentPeakBackstop + 14*time.Second, rss: 300 * mib, container: 1032 * mib, hwm: 900 * mib, want: 800 * mib},
			{after: residentPeakBackstop + 15*time.Second, rss: 300 * mib, container: 1032 * mib, hwm: 900 * mib, want: 900 * mib}}},
		{"the container's peak crept up, by less than peakMoveBytes since the last read: not read", []peakReading{first,
			{after: 15 * time.Second, rss: 300 * mib, container: 1028 * mib, hwm: 800 * mib, want: 500 * mib},
			{after: 30 * time.Second, rss: 300 * mib, container: 1031 * mib, hwm: 800 * mib, want: 500 * mib},
			{after: 45 * time.Second, rss: 300 * mib, container: 1032 * mib, hwm: 800 * mib, want: 800 * mib}}},
		{"the container's peak reset: read", []peakReading{first,
			{after: 15 * time.Second, rss: 300 * mib, container: 400 * mib, hwm: 800 * mib, want: 800 * mib}}},
		{"the container's peak known only now: read", []peakReading{
			{rss: 300 * mib, hwm: 500 * mib, want: 500 * mib},
			quiet(15*time.Second, 800*mib)}},
		{"no container's peak in a reading: not read", []peakReading{first,
			{after: 15 * time.Second, rss: 300 * mib, hwm: 800 * mib, want: 500 * mib}}},
		{"resident above the known peak: read", []peakReading{first,
			{after: 15 * time.Second, rss: 600 * mib, container: 1024 * mib, hwm: 800 * mib, want: 800 * mib}}},
		{"resident at the known peak: not read", []peakReading{first,
			{after: 15 * time.Second, rss: 500 * mib, container: 1024 * mib, hwm: 800 * mib, want: 500 * mib}}},
		{"resident a little above the known peak: not read, the reading raises it", []peakReading{first,
			{after: 15 * time.Second, rss: 507 * mib, container: 1024 * mib, hwm: 800 * mib, want: 507 * mib}}},
		{"a reused pid starts afresh", []peakReading{first,
			{after: 15 * time.Second, restarted: true, rss: 300 * mib, container: 1024 * mib, hwm: 400 * mib, want: 400 * mib}}},
		{"a failed read is tried again at the next reading", []peakReading{
			{rss: 300 * mib, container: 1024 * mib, want: 300 * mib},
			quiet(15*time.Second, 800*mib)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, strconv.Itoa(pid)), 0o755); err != nil {
				t.Fatal(err)
			}
			k := newReader(dir, "/sys", newRecords())
			t0 := time.Unix(1_800_000_000, 0)
			start := t0.Add(-time.Hour)
			for i, r := range tc.readings {
				writeFakeStatus(t, dir, pid, r.hwm)
				if r.restarted {
					start = t0.Add(r.after - time.Second)
				}
				j := JVM{Sample: Sample{Identity: Identity{PID: pid}, RSSJVM: r.rss}}
				if r.container > 0 {
					j.Cgroup, j.HasCgroup = procmem.CgroupMemory{Peak: r.container, HasPeak: true}, true
				}
				k.updatePeaks(&j, start, t0.Add(r.after))
				if j.Peaks.Resident != r.want {
					t.Errorf("reading %d (after %v): resident peak %d MiB, want %d MiB (VmHWM %d MiB)",
						i, r.after, j.Peaks.Resident/mib, r.want/mib, r.hwm/mib)
				}
			}
		})
	}
}

// writeFakeStatus writes <dir>/<pid>/status with the given VmHWM, or
// removes it for 0.
func writeFakeStatus(t *testing.T, dir string, pid int, hwm uint64) {
	t.Helper()
	path := filepath.Join(dir, strconv.Itoa(pid), "status")
	if hwm == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	status := fmt.Sprintf("Name:\tjava\nPid:\t%d\nVmPeak:\t 4194304 kB\nVmHWM:\t%8d kB\nVmRSS:\t  102400 kB\n", pid, hwm/1024)
	if err := os.WriteFile(path, []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
}
