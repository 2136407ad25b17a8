package fleetsim

// The template is a real scrape of the built exporter: this test makes it
// again, from the binary as it is, and fails when the metric contract
// (families, their label names, and the values of their enumerated labels)
// has moved away from the committed testdata/node.prom. Regenerate with
//
//	go test -run TestTemplateIsTheExportersOutput ./internal/fleetsim -update
//
// (as root, with OpenJDK 17), and commit the new file.

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

var update = flag.Bool("update", false, "rewrite testdata/node.prom from a scrape of the built exporter")

func TestTemplateIsTheExportersOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs, a real OOM kill and the exporter binary")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	if f, err := os.Open("/dev/kmsg"); err != nil {
		testenv.Unavailable(t, "/dev/kmsg unreadable: %v", err)
	} else {
		f.Close()
	}
	scrape := captureNode(t)
	if _, err := ParseTemplate(strings.NewReader(scrape)); err != nil {
		t.Fatalf("the exporter's scrape does not make a template: %v", err)
	}
	path := filepath.Join("testdata", "node.prom")
	if *update {
		if err := os.WriteFile(path, []byte(scrape), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Shape(bytes.NewReader(committed))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Shape(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	wantSet := map[string]bool{}
	for _, s := range want {
		wantSet[s] = true
	}
	gotSet := map[string]bool{}
	for _, s := range got {
		gotSet[s] = true
		if !wantSet[s] {
			t.Errorf("the exporter exports %s; testdata/node.prom does not (rerun with -update)", s)
		}
	}
	for _, s := range want {
		if !gotSet[s] {
			t.Errorf("testdata/node.prom has %s; the exporter no longer exports it (rerun with -update)", s)
		}
	}
}

// captureNode scrapes the exporter on a spot r5.xlarge (the AWS metadata
// stand-in, with an interruption announced) running two stand-in
// executors in memory cgroups, after the kernel OOM-killed a third: every
// family the mixin reads, the kill and the exit counters included.
func captureNode(t *testing.T) string {
	t.Helper()
	killCg := testenv.NewMemoryCgroup(t, 256<<20)
	steadyCg := testenv.NewMemoryCgroup(t, 384<<20)
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	imds.Set(cloudtest.AWSInstanceTypePath, "r5.xlarge")
	imds.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-01T00:00:00Z"}`)

	addr := testenv.FreeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(testenv.ExporterBinary(t), "--web.listen-address="+addr,
		"--cloud.provider=aws", "--cloud.aws.metadata-url="+imds.URL, "--jvm.sample-interval=500ms")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("exporter log:\n%s", logs.String())
		}
	})
	get := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	testenv.WaitFor(t, 20*time.Second, "the exporter to answer", func() bool { return get() != "" })

	for _, id := range []string{"1", "2"} {
		testjvm.Start(t, testjvm.Options{
			JVMArgs: []string{"-Xmx96m", "-XX:+UseG1GC"},
			Cgroup:  steadyCg.Procs(),
			Args: []string{"--executor-id", id, "--app-id", templateApp,
				"--heap-mb", "32", "--churn", "--exit-after-s", "600"},
		})
	}
	testjvm.Start(t, testjvm.Options{
		MainClass: testjvm.IdleClass,
		JVMArgs:   []string{"-Xmx16m", "-XX:+UseSerialGC", "-Xss256k"},
		Cgroup:    killCg.Procs(),
	})
	victim := testjvm.Start(t, testjvm.Options{
		Cgroup:  killCg.Procs(),
		Prelude: "echo 1000 > /proc/self/oom_score_adj && ",
		JVMArgs: []string{"-Xmx64m", "-XX:+UseG1GC", "-XX:MaxDirectMemorySize=1g"},
		Args: []string{"--executor-id", "3", "--app-id", templateApp, "--exit-after-s", "120",
			"--direct-mb", "400", "--step-mb", "4", "--step-ms", "100"},
	})
	select {
	case <-victim.Done():
	case <-time.After(90 * time.Second):
		t.Fatal("the third executor was not OOM-killed within 90 s")
	}
	var scrape string
	testenv.WaitFor(t, 60*time.Second, "the kill, the exit and every executor's native memory in the scrape", func() bool {
		scrape = get()
		return strings.Contains(scrape, `executor_oom_kills_total{`) &&
			strings.Contains(scrape, `reason="oom_killed"`) &&
			strings.Contains(scrape, `executor_jvm_exits_total{`) &&
			strings.Count(scrape, `executor_jvm_native_memory_timestamp_seconds{`) >= 3
	})
	// Counters read 0 on their first scrape; take the one after.
	time.Sleep(2 * time.Second)
	return ownSeries(get(), templateApp)
}

var pidLabel = regexp.MustCompile(`[{,]pid="([^"]*)"`)

// ownSeries keeps the node's series and those of the application's JVMs:
// the machine is shared, and other tests' JVMs are in the scrape too.
func ownSeries(scrape, app string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(scrape, "\n") {
		m := pidLabel.FindStringSubmatch(line)
		if strings.HasPrefix(line, "#") || m == nil || strings.Contains(line, `app_id="`+app+`"`) {
			b.WriteString(line)
		}
	}
	return b.String()
}
