package hsperf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// requireJava stops the test when the JDK tools are missing: a failure in
// CI, where OpenJDK 17 must be installed, a skip elsewhere.
func requireJava(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"java", "jstat"} {
		testenv.RequireTool(t, tool) // the live test needs OpenJDK 17
	}
}

// startAllocJVM runs testdata/Alloc.java with the given collector and waits
// until it has allocated and settled. The JVM is stopped with SIGTERM (so it
// removes its hsperfdata file) when the test ends.
func startAllocJVM(t *testing.T, gcFlag string) int {
	t.Helper()
	cmd := exec.Command("java", gcFlag, "-Xmx64m", filepath.Join("testdata", "Alloc.java"))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				ready <- nil
				_, _ = bufio.NewReader(stdout).WriteTo(devNull{})
				return
			}
		}
		ready <- fmt.Errorf("java %s exited before it was ready: %v", gcFlag, sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("java %s not ready after 90s", gcFlag)
	}
	return cmd.Process.Pid
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

func hsperfPath(t *testing.T, pid int) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	// Always /tmp, whatever java.io.tmpdir says.
	return fmt.Sprintf("/tmp/hsperfdata_%s/%d", u.Username, pid)
}

func readStats(t *testing.T, path string) (*Snapshot, Stats) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s, st
}

func runJstat(t *testing.T, pid int) jstatTable {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "jstat", "-gc", fmt.Sprint(pid)).Output()
	if err != nil {
		t.Fatalf("jstat -gc %d: %v", pid, err)
	}
	return parseJstat(t, string(out))
}

// TestLiveAgainstJstat starts a JVM per collector and checks that Stats
// agrees with jstat -gc run on the same pid right after reading the file.
//
// The JVMs stop allocating once ready, but ZGC keeps running cycles (many a
// second at this heap occupancy), so the file is read before and after
// jstat and jstat's values must lie between the two reads, give or take its
// own rounding (0.05 KiB per column): a mistake in which spaces are summed
// (a survivor space, the eden) or in G1's padding is off by far more. A
// disagreement is retried twice before it fails, in case a collection moved
// used bytes both ways between the reads.
func TestLiveAgainstJstat(t *testing.T) {
	requireJava(t)
	wantGCName := map[string]string{"g1": "G1", "parallel": "Parallel", "serial": "Serial", "z": "ZGC", "shenandoah": "Shenandoah"}
	for _, f := range fixtures {
		if !f.live {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			pid := startAllocJVM(t, f.flag)
			path := hsperfPath(t, pid)
			var diffs []string
			for attempt := 0; attempt < 3; attempt++ {
				before, beforeStats := readStats(t, path)
				j := runJstat(t, pid)
				after, afterStats := readStats(t, path)
				checkInvariants(t, afterStats)
				if afterStats.GCName != wantGCName[f.name] {
					t.Errorf("GCName = %q, want %q", afterStats.GCName, wantGCName[f.name])
				}
				if afterStats.HeapMax != xmx {
					t.Errorf("HeapMax = %d, want -Xmx64m", afterStats.HeapMax)
				}
				if age := time.Since(afterStats.StartTime); age < 0 || age > 5*time.Minute {
					t.Errorf("StartTime %v is not the JVM's start", afterStats.StartTime)
				}
				t.Logf("heap used %d committed %d, collectors %+v; jstat S0U+S1U+EU+OU %.0f S0C+S1C+EC+OC %.0f YGC %v FGC %v CGC %v",
					afterStats.HeapUsed, afterStats.HeapCommitted, afterStats.GCs,
					j.kib("S0U", "S1U", "EU", "OU"), j.kib("S0C", "S1C", "EC", "OC"), j["YGC"], j["FGC"], j["CGC"])
				diffs = compareWithJstat(read{before, beforeStats}, read{after, afterStats}, j, jstatRounding(4))
				if len(diffs) == 0 {
					break
				}
				t.Logf("attempt %d: %s", attempt+1, strings.Join(diffs, "; "))
			}
			for _, d := range diffs {
				t.Error(d)
			}
		})
	}
}

// TestLiveStartupReads reads a JVM's file over and over from the moment it
// appears until the JVM is ready, as a scrape may: every read must give
// Stats or fail with ErrNotAccessible — the file empty or zeros, accessible
// still 0, or (HotSpot sets accessible before it has created all its
// counters) sun.os.hrt.frequency not there yet — never a malformed-file
// error, which would cost a series.
func TestLiveStartupReads(t *testing.T) {
	requireJava(t)
	cmd := exec.Command("java", "-XX:+UseG1GC", "-Xmx64m", filepath.Join("testdata", "Alloc.java"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				close(ready)
				break
			}
		}
		_, _ = bufio.NewReader(stdout).WriteTo(devNull{})
	}()
	path := hsperfPath(t, cmd.Process.Pid)
	counts := map[string]int{}
	// Start-up is when counters are added: every read also goes through
	// a Plan, which must agree with the full parse.
	var plan Plan
	var prev Stats
	deadline := time.After(90 * time.Second)
	for done, n := false, 0; !done; n++ {
		select {
		case <-ready:
			done = true
		case <-deadline:
			t.Fatal("JVM not ready after 90s")
		default:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			counts["not there yet"]++
			time.Sleep(time.Millisecond)
			continue
		}
		if resumes(&plan, b) {
			counts["resumed a Plan"]++
		}
		if st, err := checkAgainstFull(t, b, &prev, &plan); err == nil {
			prev = st
		}
		s, err := Parse(b)
		if err == nil {
			_, err = s.Stats()
		}
		switch {
		case errors.Is(err, ErrNotAccessible):
			counts["not ready: "+notReadyReason(err)]++
		case err != nil:
			t.Fatalf("read %d: %v", n, err)
		default:
			counts["parsed"]++
			if s.Pending > 0 {
				counts["with entries in progress"]++
			}
		}
	}
	t.Logf("reads during start-up: %v", counts)
	if counts["parsed"] == 0 {
		t.Error("never parsed the file")
	}
	if counts["resumed a Plan"] == 0 {
		t.Error("no read resumed the Plan of the one before")
	}
}

// TestLivePlanRereads reads a running JVM's file as a scan does, each time
// after its timer has moved, with the Plan of the read before: each read
// must resume it and agree with a full parse of the same bytes.
func TestLivePlanRereads(t *testing.T) {
	requireJava(t)
	path := hsperfPath(t, startAllocJVM(t, "-XX:+UseG1GC"))
	var plan Plan
	var prev Stats
	var ticks int64
	for i := 0; i < 5; i++ {
		var b []byte
		testenv.WaitFor(t, 30*time.Second, "the JVM's timer to move", func() bool {
			var err error
			if b, err = os.ReadFile(path); err != nil {
				t.Fatal(err)
			}
			_, now, err := ParseStats(b, nil, nil)
			return err == nil && now != ticks
		})
		if i > 0 && !resumes(&plan, b) {
			t.Errorf("read %d did not resume the Plan", i)
		}
		st, err := checkAgainstFull(t, b, &prev, &plan)
		if err != nil {
			t.Fatal(err)
		}
		_, ticks, _ = ParseStats(b, nil, nil)
		prev = st
	}
}

// notReadyReason buckets ErrNotAccessible errors for the test's log.
func notReadyReason(err error) string {
	switch msg := err.Error(); {
	case errors.Is(err, ErrMissingCounter):
		return "counters missing"
	case strings.Contains(msg, "empty"):
		return "empty"
	case strings.Contains(msg, "zeros"):
		return "zeros"
	default:
		return "accessible=0"
	}
}
