package jvm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

func hsperfFile(t testing.TB, j *testjvm.JVM) string {
	t.Helper()
	matches, _ := filepath.Glob(fmt.Sprintf("/tmp/hsperfdata_*/%d", j.NSPID))
	if len(matches) != 1 {
		t.Fatalf("hsperfdata of pid %d: %v", j.NSPID, matches)
	}
	return matches[0]
}

// startSleeper starts a real process that is not a JVM, as cred's user
// when cred is set, and returns its pid.
func startSleeper(t testing.TB, cred *syscall.Credential) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// plantHsperf writes data where HotSpot would write pid's counters for
// the user uid, and removes it when the test ends.
func plantHsperf(t testing.TB, uid, pid int, data []byte) string {
	t.Helper()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		t.Fatal(err)
	}
	dir := "/tmp/hsperfdata_" + u.Username
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Runs after the file's removal below (cleanups run last first).
		t.Cleanup(func() { os.Remove(dir) })
	}
	path := filepath.Join(dir, strconv.Itoa(pid))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return path
}

// TestTrackerBadHsperfdata places broken files for real processes next to
// a real JVM: each costs only its own process, is counted by reason, and
// the JVM is still read.
func TestTrackerBadHsperfdata(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	j := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, JVMArgs: []string{"-Xmx32m"}, Args: []string{"--exit-after-s", "300"}})
	good, err := os.ReadFile(hsperfFile(t, j))
	if err != nil {
		t.Fatal(err)
	}
	withOffset := func(off uint32) []byte {
		b := bytes.Clone(good)
		order := binary.ByteOrder(binary.LittleEndian)
		if b[4] == 0 { // byte_order: 0 big endian, 1 little endian
			order = binary.BigEndian
		}
		order.PutUint32(b[24:], off) // entry_offset
		return b
	}
	random := make([]byte, len(good))
	rand.New(rand.NewSource(1)).Read(random)
	wrongMagic := bytes.Clone(good)
	copy(wrongMagic, []byte{0xde, 0xad, 0xbe, 0xef})

	uid := os.Geteuid()
	cases := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"stale copy of a live JVM's file", good, ReasonStale},
		// What a JVM's file looks like in its first moments: skipped until
		// the JVM is older than startupGrace, not counted as corrupt.
		{"zero length (a starting JVM)", nil, ""},
		{"prologue only", good[:16], ReasonCorrupt},
		{"truncated", good[:len(good)/3], ReasonCorrupt},
		{"wrong magic", wrongMagic, ReasonCorrupt},
		{"huge entry offset", withOffset(0x7ffffff0), ReasonCorrupt},
		{"random", random, ReasonCorrupt},
		{"over the size cap", make([]byte, MaxHsperfBytes+1), ReasonCorrupt},
	}
	var logs bytes.Buffer
	tr := newLiveTracker(t, log.NewLogfmtLogger(log.NewSyncWriter(&logs)))
	// Let the clock move past the JVM's creation plus the tracker's slack,
	// so the copy planted for a newer process is recognisably older.
	time.Sleep(startSlack + 2*time.Second) // + the up to 1s btime rounding
	want := map[string]uint64{}
	pids := map[int]string{}
	for _, c := range cases {
		pid := startSleeper(t, nil)
		plantHsperf(t, uid, pid, c.data)
		want[c.reason]++
		pids[pid] = c.name
	}
	// The sleepers start after the JVM, so the copy of its file is older
	// than the process it is planted for: stale.
	view := mustRefresh(t, tr)
	if _, ok := findJVM(view, j.PID); !ok {
		t.Fatalf("the real JVM %d is missing from %+v", j.PID, view.JVMs)
	}
	for pid, name := range pids {
		if _, ok := findJVM(view, pid); ok {
			t.Errorf("%s: pid %d was reported as a JVM", name, pid)
		}
	}
	got := tr.ErrorCounts()
	for reason, n := range want {
		if reason != "" && got[reason] < n {
			t.Errorf("errors[%s] = %d, want at least %d (all: %v)", reason, got[reason], n, got)
		}
	}
	// A second scan counts again but logs nothing new: failures are
	// logged once per logEvery.
	before := strings.Count(logs.String(), "skipping JVM")
	mustRefresh(t, tr)
	if after := strings.Count(logs.String(), "skipping JVM"); after != before {
		t.Errorf("second scan logged %d more failures; logs:\n%s", after-before, logs.String())
	}
	if before < len(cases)-1 { // stale is logged at debug level, which the test logger keeps too
		t.Errorf("first scan logged %d failures, want one per broken file:\n%s", before, logs.String())
	}
}

// TestTrackerPermissionDenied runs a scan as an unprivileged user over a
// process of that user whose hsperfdata it may not read (mode 000).
func TestTrackerPermissionDenied(t *testing.T) {
	testenv.RequireRoot(t) // to run the scan as another user
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}

	pid := startSleeper(t, cred)
	path := plantHsperf(t, uid, pid, []byte("unread"))
	if err := os.Chown(filepath.Dir(path), uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}

	// The test binary lives in a private build directory; copy it where
	// nobody can run it.
	dir, err := os.MkdirTemp("", "jvm-test-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "jvm.test")
	copyFile(t, os.Args[0], bin)

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "JVM_HELPER_SCAN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unprivileged scan: %v\n%s", err, out)
	}
	var result helperResult
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "helper-result "); ok {
			if err := json.Unmarshal([]byte(rest), &result); err != nil {
				t.Fatal(err)
			}
		}
	}
	if result.Errors[ReasonPermission] < 1 {
		t.Fatalf("unprivileged scan counted no permission error: %+v\n%s", result, out)
	}
	for _, p := range result.PIDs {
		if p == pid {
			t.Errorf("pid %d with an unreadable file was reported", pid)
		}
	}
}

type helperResult struct {
	PIDs   []int
	Errors map[string]uint64
}

// TestMain lets TestTrackerPermissionDenied re-run this binary as another
// user to scan and report, instead of running tests.
func TestMain(m *testing.M) {
	if os.Getenv("JVM_HELPER_SCAN") == "1" {
		os.Exit(helperScan())
	}
	os.Exit(m.Run())
}

func helperScan() int {
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		fmt.Println(err)
		return 1
	}
	view, err := tr.Refresh()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	var r helperResult
	for _, j := range view.JVMs {
		r.PIDs = append(r.PIDs, j.PID)
	}
	r.Errors = tr.ErrorCounts()
	b, _ := json.Marshal(r)
	fmt.Printf("helper-result %s\n", b)
	return 0
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
