package nativemem

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// The truth test: real JVMs (test/java/standin/Leak.java) leak one kind of
// memory each, and the breakdown taken from outside before and after must
// put the growth in the matching region, name that region as the one that
// grew most, and agree with the JVM's own Native Memory Tracking.

const leakMB = 200 // what each stand-in leaks (metaspace: leakClassesMB)

const leakClassesMB = 120

// truthTolerance is how far a region's growth may be from NMT's growth of
// its category (or the mapped file's size).
const truthTolerance = 0.20

type truthCase struct {
	kind   string
	gc     string // a -XX:+Use...GC flag
	region Region
	// expect is what the region should grow by, from NMT's summaries
	// before and after, or from what was leaked; what names it.
	expect func(before, after nmtSummary) int64
	what   string
	args   []string
	// collect: HotSpot updates hsperfdata's metaspace counters (the
	// layout's MetaspaceCommitted) only at a collection, so metaspace
	// committed since the last one reads as the collector's. The case
	// checks that reading for what the JVM committed as a whole, then
	// runs a collection (jcmd GC.run) and checks the regions.
	collect bool
}

func nmtGrowth(category string) func(before, after nmtSummary) int64 {
	return func(before, after nmtSummary) int64 {
		return int64(after[category].Committed) - int64(before[category].Committed)
	}
}

func metaspaceGrowth(before, after nmtSummary) int64 {
	return int64(after.metaspace()) - int64(before.metaspace())
}

var collectors = []string{"-XX:+UseG1GC", "-XX:+UseParallelGC", "-XX:+UseSerialGC", "-XX:+UseZGC", "-XX:+UseShenandoahGC"}

func truthCases() []truthCase {
	var cases []truthCase
	for _, gc := range collectors {
		cases = append(cases,
			truthCase{kind: "direct-large", gc: gc, region: NativeMmap, expect: nmtGrowth("Other"), what: "NMT Other committed"},
			truthCase{kind: "threads", gc: gc, region: ThreadStacks, expect: nmtGrowth("Thread"), what: "NMT Thread committed"},
		)
	}
	g1 := collectors[0]
	cases = append(cases,
		truthCase{kind: "direct-small", gc: g1, region: Malloc, expect: nmtGrowth("Other"), what: "NMT Other committed"},
		truthCase{kind: "classes", gc: g1, region: Metaspace, expect: metaspaceGrowth, what: "NMT Metaspace + class space committed",
			args: []string{"--target-mb", strconv.Itoa(leakClassesMB)}, collect: true},
		truthCase{kind: "mapped", gc: g1, region: MappedFiles, expect: func(_, _ nmtSummary) int64 { return leakMB << 20 }, what: "the mapped file's size"},
	)
	return cases
}

func TestTruthLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	testjvm.RequireJava(t)
	testenv.RequireTool(t, "jcmd")
	testjvm.Classpath(t) // compile once, before the parallel subtests
	t.Run("kinds", func(t *testing.T) {
		for _, c := range truthCases() {
			c := c
			name := c.kind + "/" + strings.TrimSuffix(strings.TrimPrefix(c.gc, "-XX:+Use"), "GC")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				requireCollector(t, c.gc)
				runTruth(t, c)
			})
		}
		t.Run("shm/G1", func(t *testing.T) {
			t.Parallel()
			runShm(t)
		})
	})
	truthMu.Lock()
	defer truthMu.Unlock()
	sort.Strings(truthReports)
	t.Logf("growth by kind and collector:\n%s", strings.Join(truthReports, "\n"))
}

// leakJVM is a stand-in that has printed "ready" and waits for SIGUSR1.
func leakJVM(t *testing.T, kind, gc string, args ...string) *testjvm.JVM {
	t.Helper()
	return testjvm.Start(t, testjvm.Options{
		MainClass: "standin.Leak",
		JVMArgs:   []string{"-XX:NativeMemoryTracking=summary", "-Xmx256m", gc},
		Args:      append([]string{"--kind", kind, "--target-mb", strconv.Itoa(leakMB), "--on-signal", "USR1", "--exit-after-s", "300"}, args...),
	})
}

// leak signals the stand-in and waits until it has leaked.
func leak(t *testing.T, j *testjvm.JVM) {
	t.Helper()
	if err := syscall.Kill(j.PID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 90*time.Second, "the stand-in to print leaked", func() bool {
		for {
			select {
			case line, ok := <-j.Lines:
				if !ok {
					<-j.Done()
					t.Fatalf("JVM %d exited before it leaked: %v", j.PID, j.Err())
				}
				if strings.HasPrefix(line, "leaked") {
					return true
				}
			default:
				return false
			}
		}
	})
}

// snapshot is a breakdown of a JVM with NMT's summary taken just before it
// (jcmd's first attach starts a thread in the JVM: both breakdowns see it).
type snapshot struct {
	reading Reading
	layout  Layout
	nmt     nmtSummary
	smaps   []byte
}

func takeSnapshot(t *testing.T, pid int) snapshot {
	t.Helper()
	var s snapshot
	s.nmt = nmtOf(t, pid)
	var err error
	if s.smaps, err = os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid)); err != nil {
		t.Fatal(err)
	}
	ms, err := ParseSmaps(s.smaps, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.layout = layoutOf(t, pid)
	s.reading = Reading{Time: time.Now(), Regions: Classify(ms, s.layout)}
	if rss := sumRss(t, s.smaps); s.reading.Regions.Total() != rss {
		t.Errorf("Total() = %d, the Rss lines add up to %d", s.reading.Regions.Total(), rss)
	}
	return s
}

// layoutOf reads the JVM's hsperfdata, as the exporter does.
func layoutOf(t *testing.T, pid int) Layout {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("/tmp", "hsperfdata_"+u.Username, strconv.Itoa(pid)))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := hsperf.ParseStats(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return LayoutOf(&st)
}

func jcmd(t *testing.T, pid int, args ...string) string {
	t.Helper()
	out, err := exec.Command("jcmd", append([]string{strconv.Itoa(pid)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd %d %s: %v\n%s", pid, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func nmtOf(t *testing.T, pid int) nmtSummary {
	t.Helper()
	s, err := parseNMT(jcmd(t, pid, "VM.native_memory", "summary"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runTruth(t *testing.T, c truthCase) {
	var args []string
	if c.kind == "mapped" {
		args = append(args, "--file", filepath.Join(t.TempDir(), "mapped.bin"))
	}
	j := leakJVM(t, c.kind, c.gc, append(args, c.args...)...)
	before := takeSnapshot(t, j.PID)
	leak(t, j)
	after := takeSnapshot(t, j.PID)
	if c.collect {
		checkUncollected(t, c, before, after)
		jcmd(t, j.PID, "GC.run")
		after = takeSnapshot(t, j.PID)
	}

	grew := int64(after.reading.Regions[c.region]) - int64(before.reading.Regions[c.region])
	want := c.expect(before.nmt, after.nmt)
	resident := int64(after.reading.Regions.Total()) - int64(before.reading.Regions.Total())
	top := TopGrowth(before.reading, after.reading)
	report := fmt.Sprintf("%s %s: %s grew %s, %s grew %s (%+.1f%%); the process grew %s; TopGrowth: %s %s\n  deltas: %s\n  layout before %+v, after %+v",
		c.kind, c.gc, c.region, mibs(grew), c.what, mibs(want), 100*(float64(grew)/float64(want)-1), mibs(resident),
		top.Region, mibs(int64(top.Bytes)), deltas(before.reading, after.reading), before.layout, after.layout)
	t.Log(report)
	recordTruth(report)

	if want < 32<<20 {
		t.Fatalf("%s grew only %s: the stand-in did not leak", c.what, mibs(want))
	}
	if math.Abs(float64(grew-want)) > truthTolerance*float64(want) {
		t.Errorf("%s grew %s, %s %s: more than %.0f%% apart", c.region, mibs(grew), c.what, mibs(want), 100*truthTolerance)
	}
	if top.Region != c.region.String() {
		t.Errorf("TopGrowth names %q (%s), want %q", top.Region, mibs(int64(top.Bytes)), c.region)
	}
	if int64(top.Bytes) < resident/2 {
		t.Errorf("TopGrowth's %s is less than half the process's growth, %s", mibs(int64(top.Bytes)), mibs(resident))
	}
	if t.Failed() {
		t.Logf("evidence, after the leak:\n%s", evidence(after.smaps, after.layout))
	}
}

// checkUncollected checks a reading taken before any collection has
// brought the layout's MetaspaceCommitted up to date: what the JVM
// committed in its reservations (metaspace and the collector's region
// together) grew as NMT's metaspace did.
func checkUncollected(t *testing.T, c truthCase, before, after snapshot) {
	t.Helper()
	d := func(r Region) int64 { return int64(after.reading.Regions[r]) - int64(before.reading.Regions[r]) }
	want := c.expect(before.nmt, after.nmt)
	report := fmt.Sprintf("%s %s before a collection: metaspace grew %s, gc %s, %s %s; the layout's MetaspaceCommitted %s, NMT's Metaspace committed %s",
		c.kind, c.gc, mibs(d(Metaspace)), mibs(d(GC)), c.what, mibs(want),
		mibs(int64(after.layout.MetaspaceCommitted)), mibs(int64(after.nmt["Metaspace"].Committed)))
	t.Log(report)
	recordTruth(report)
	if got := d(Metaspace) + d(GC); math.Abs(float64(got-want)) > truthTolerance*float64(want) {
		t.Errorf("before a collection, metaspace and gc grew %s together, %s %s: more than %.0f%% apart", mibs(got), c.what, mibs(want), 100*truthTolerance)
	}
}

// runShm: 200 MiB written to a file under /dev/shm is charged to the
// container, not to any region of the JVM, which never maps it; that the
// container's shmem names it is the container-level test's business.
func runShm(t *testing.T) {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		testenv.Unavailable(t, "no /dev/shm: %v", err)
	}
	path := fmt.Sprintf("/dev/shm/nativemem-truth-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(path) })
	j := leakJVM(t, "shm", collectors[0], "--file", path)
	before := takeSnapshot(t, j.PID)
	leak(t, j)
	after := takeSnapshot(t, j.PID)
	st, err := os.Stat(path)
	if err != nil || st.Size() != leakMB<<20 {
		t.Fatalf("the stand-in wrote %v, %v; want %d MiB", st, err, leakMB)
	}
	top := TopGrowth(before.reading, after.reading)
	resident := int64(after.reading.Regions.Total()) - int64(before.reading.Regions.Total())
	report := fmt.Sprintf("shm -XX:+UseG1GC: %d MiB in /dev/shm; the process grew %s; TopGrowth: %s %s\n  deltas: %s",
		leakMB, mibs(resident), top.Region, mibs(int64(top.Bytes)), deltas(before.reading, after.reading))
	t.Log(report)
	recordTruth(report)
	const few = 8 << 20
	for r := Region(0); r < NumRegions; r++ {
		if d := int64(after.reading.Regions[r]) - int64(before.reading.Regions[r]); d > few {
			t.Errorf("%s grew %s though the JVM never mapped the file", r, mibs(d))
		}
	}
	if resident > few {
		t.Errorf("the process grew %s though the JVM never mapped the file", mibs(resident))
	}
}

var collectorChecks sync.Map // flag -> error of java <flag> -version

// requireCollector stops a test whose collector this JDK lacks (Oracle's
// builds have no Shenandoah): a failure in CI, whose JDK has them all.
func requireCollector(t *testing.T, flag string) {
	t.Helper()
	v, ok := collectorChecks.Load(flag)
	if !ok {
		out, err := exec.Command("java", flag, "-version").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		v, _ = collectorChecks.LoadOrStore(flag, err)
	}
	if err, _ := v.(error); err != nil {
		testenv.Unavailable(t, "java %s: %v", flag, err)
	}
}

var (
	truthMu      sync.Mutex
	truthReports []string
)

// recordTruth keeps a case's figures for the summary at the end of the
// run (go test -v prints each case's log too).
func recordTruth(s string) {
	truthMu.Lock()
	defer truthMu.Unlock()
	truthReports = append(truthReports, s)
}

func mibs(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }

func deltas(a, b Reading) string {
	var s []string
	for r := Region(0); r < NumRegions; r++ {
		if d := int64(b.Regions[r]) - int64(a.Regions[r]); d <= -1<<20 || d >= 1<<20 {
			s = append(s, fmt.Sprintf("%s %+.1f", r, float64(d)/(1<<20)))
		}
	}
	return strings.Join(s, ", ") + " (MiB)"
}

// evidence says where the heap and the class space were found and lists
// the first mappings of each span and the resident anonymous mappings with
// the region each gets on its own, for a failure's message.
func evidence(smaps []byte, l Layout) string {
	ms, err := ParseSmaps(smaps, nil)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, r := range []struct {
		name string
		size uint64
	}{{"heap", l.HeapReserved}, {"class space", l.ClassSpaceReserved}} {
		sp := findReservation(ms, r.size)
		fmt.Fprintf(&b, "%s (%s) found at %x-%x:\n", r.name, human(r.size), sp.lo, sp.hi)
		n := 0
		for i := range ms {
			if sp.overlaps(&ms[i]) {
				if n++; n > 6 {
					b.WriteString("  ...\n")
					break
				}
				b.WriteString(dumpMappings(ms[i : i+1]))
			}
		}
	}
	b.WriteString("resident anonymous mappings of 1 MiB and more, and their rule:\n")
	n := 0
	for i := range ms {
		m := &ms[i]
		if !m.Anonymous() || m.Rss < 1<<20 {
			continue
		}
		if n++; n > 40 {
			b.WriteString("  ...\n")
			break
		}
		fmt.Fprintf(&b, "%s -> %s\n", strings.TrimSuffix(dumpMappings(ms[i:i+1]), "\n"), anonRegion(ms, i))
	}
	return b.String()
}
