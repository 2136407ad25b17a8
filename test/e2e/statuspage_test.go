package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// xssAppID is the application id of a live executor: it comes from the
// JVM's command line, and must show as text.
const xssAppID = "app-<script>document.title='pwned'</script>"

// TestStatusPageInBrowser: the built exporter on a spot AWS machine (a
// loopback IMDS stand-in announcing an interruption) with a live executor
// whose heap cannot fit its container and a second executor the kernel
// OOM-kills in a 256 MiB memory cgroup; headless Chromium opens / and the
// rendered DOM must show the machine, the live executor's row (its app id,
// from the command line, holding <script>, as text), the kill with its
// heap verdict and advice, and the executor's exit as oom_killed. The
// screenshot is saved as an artifact (go test -artifacts -outputdir DIR;
// make test keeps them in .artifacts/). The README's is
// TestStatusPageNativeKill's.
func TestStatusPageInBrowser(t *testing.T) {
	testenv.RequireRoot(t)
	requireKmsg(t)
	testjvm.RequireJava(t)
	testjvm.Classpath(t) // javac is a JVM too: compile before the exporter watches
	chromium := testenv.RequireTool(t, "chromium")

	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	imds.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-02T03:04:05Z"}`)
	killCg := testenv.NewMemoryCgroup(t, oomCgroupLimit)
	liveCg := testenv.NewMemoryCgroup(t, 512<<20)

	e := startExporter(t, "--jvm.sample-interval=500ms",
		"--cloud.provider=aws", "--cloud.aws.metadata-url="+imds.URL, "--cloud.interruption-poll-interval=100ms")
	// -Xmx640m in a 512 MiB container: idle, it fits today, but its heap
	// may grow past the limit; the page must say so.
	live := testjvm.Start(t, testjvm.Options{
		Cgroup:  liveCg.Procs(),
		JVMArgs: []string{"-Xmx640m", "-XX:+UseSerialGC"},
		Args:    []string{"--executor-id", "7", "--app-id", xssAppID, "--python-mb", "40", "--exit-after-s", "300"},
	})
	victim := testjvm.Start(t, testjvm.Options{
		Cgroup:  killCg.Procs(),
		Prelude: "echo 1000 > /proc/self/oom_score_adj && ",
		JVMArgs: []string{"-Xmx1g", "-XX:-AlwaysPreTouch"},
		Args: []string{"--executor-id", "3", "--app-id", "app-oom-test", "--exit-after-s", "120",
			"--step-mb", "4", "--step-ms", "100", "--heap-mb", "600"},
	})
	select {
	case <-victim.Done():
	case <-time.After(90 * time.Second):
		t.Fatal("the executor was not OOM-killed within 90 s")
	}
	var exit *exec.ExitError
	if !errors.As(victim.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the executor ended with %v, want killed by SIGKILL", victim.Err())
	}

	// The page shows what the exporter holds; wait until it holds the
	// kill, the exit, the machine and a sample of the live executor with
	// its Python worker.
	var status statuspage.Snapshot
	var victimExit *statuspage.Exit
	testenv.WaitFor(t, 60*time.Second, "/status.json to hold the kill, the exit, the machine and the live executor", func() bool {
		status = getStatus(t, e)
		// Other tests' JVMs on this machine end too, and the page lists
		// the last 20 exits: keep the victim's from the poll that shows
		// it, before later ends push it out.
		if x := findExit(status, victim.PID); x != nil {
			victimExit = x
		}
		return findKill(status, victim.PID) != nil && victimExit != nil &&
			status.Machine != nil && len(status.Machine.Notices) > 0 &&
			findJVM(status, live.PID) != nil && findJVM(status, live.PID).RSSPython > 0
	})
	if k := findKill(status, victim.PID); k.Cause != "heap" || k.Victim == nil || k.Victim.ExecutorID != "3" || k.LastSample == nil {
		t.Errorf("status.json kill: %+v, want cause heap, executor 3 and its last sample", k)
	}
	if victimExit.Reason != "oom_killed" || victimExit.ExecutorID != "3" {
		t.Errorf("status.json exit: %+v, want executor 3 oom_killed", victimExit)
	}

	dom := chromiumDumpDOM(t, chromium, "http://"+e.Addr+"/")
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	checkStatusDOM(t, doc, live, victim)
	if scripts := findAll(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "script" }); len(scripts) > 0 {
		t.Errorf("the rendered page has %d <script> elements; the app id from the command line became markup", len(scripts))
	}
	if title := textOf(findFirst(doc, func(n *html.Node) bool { return n.Data == "title" })); title != "Executor Exporter" {
		t.Errorf("page title %q: a script ran", title)
	}

	shot := filepath.Join(t.ArtifactDir(), "status-page.png")
	chromiumScreenshot(t, chromium, "http://"+e.Addr+"/", shot)
	t.Logf("screenshot: %s", shot)
}

// checkStatusDOM checks the rendered page: the machine, the live
// executor's row, the kill and the exit.
func checkStatusDOM(t *testing.T, doc *html.Node, live, victim *testjvm.JVM) {
	t.Helper()
	machine := textOf(byID(doc, "machine"))
	for _, want := range []string{"aws", "m5.xlarge", "spot", "eu-west-1a", "i-0123456789abcdef0"} {
		if !strings.Contains(machine, want) {
			t.Errorf("machine section %q lacks %q", machine, want)
		}
	}
	if notice := textOf(findFirst(doc, hasClass("notice"))); !strings.Contains(notice, "spot_interruption pending") {
		t.Errorf("interruption notice %q, want spot_interruption pending", notice)
	}

	row := findFirst(doc, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-pid") == strconv.Itoa(live.PID) })
	if row == nil {
		t.Fatalf("no row for the live executor (pid %d) in the JVM table: %q", live.PID, textOf(byID(doc, "jvms")))
	}
	if got := textOf(findFirst(row, hasClass("app-id"))); got != xssAppID {
		t.Errorf("the live executor's app id renders as %q, want the text %q", got, xssAppID)
	}
	if got := textOf(findFirst(row, hasClass("executor-id"))); got != "7" {
		t.Errorf("the live executor's id renders as %q, want 7", got)
	}
	if !strings.Contains(textOf(row), "512 MiB") {
		t.Errorf("the live executor's row %q does not show its 512 MiB limit", textOf(row))
	}
	if attr(row, "class") != "over" || !strings.Contains(textOf(findFirst(row, hasClass("verdict"))), "does not fit") {
		t.Errorf("the live executor (-Xmx640m in 512 MiB) is drawn %q, %q; want over, does not fit",
			attr(row, "class"), textOf(findFirst(row, hasClass("verdict"))))
	}

	var kill *html.Node
	for _, k := range findAll(doc, hasClass("kill")) {
		if strings.Contains(textOf(findFirst(k, hasClass("victim"))), fmt.Sprintf("Spark executor 3 of app-oom-test (pid %d)", victim.PID)) {
			kill = k
		}
	}
	if kill == nil {
		t.Fatalf("no kill of executor 3 (pid %d) on the page: %q", victim.PID, textOf(byID(doc, "kills")))
	}
	if got := textOf(findFirst(kill, hasClass("cause"))); got != "heap" {
		t.Errorf("the kill's cause renders as %q, want heap", got)
	}
	if got := textOf(findFirst(kill, hasClass("advice"))); !strings.Contains(got, "spark.executor.memory") {
		t.Errorf("the kill's advice %q does not name spark.executor.memory", got)
	}
	if got := textOf(findFirst(kill, hasClass("reason"))); !strings.Contains(got, "committed heap") {
		t.Errorf("the kill's reason %q does not give the figures", got)
	}

	// The exit, unless other tests' JVMs ending since pushed it out of the
	// last 20.
	for _, tr := range findAll(byID(doc, "exits"), func(n *html.Node) bool { return n.Data == "tr" }) {
		if !strings.Contains(textOf(tr), fmt.Sprintf("Spark executor 3 of app-oom-test (pid %d)", victim.PID)) {
			continue
		}
		if got := textOf(findFirst(tr, hasClass("exit-reason"))); got != "oom_killed" {
			t.Errorf("the executor's exit renders with reason %q, want oom_killed: %q", got, textOf(tr))
		}
	}
}

func getStatus(t *testing.T, e *exporter) statuspage.Snapshot {
	t.Helper()
	resp, err := http.Get("http://" + e.Addr + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /status.json: %s %s: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var s statuspage.Snapshot
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatalf("status.json: %v: %s", err, body)
	}
	return s
}

func findKill(s statuspage.Snapshot, pid int) *statuspage.Kill {
	for i := range s.Kills {
		if s.Kills[i].PID == pid {
			return &s.Kills[i]
		}
	}
	return nil
}

func findExit(s statuspage.Snapshot, pid int) *statuspage.Exit {
	for i := range s.Exits {
		if s.Exits[i].PID == pid {
			return &s.Exits[i]
		}
	}
	return nil
}

func findJVM(s statuspage.Snapshot, pid int) *statuspage.JVM {
	for i := range s.JVMs {
		if s.JVMs[i].PID == pid {
			return &s.JVMs[i]
		}
	}
	return nil
}

// chromiumArgs run Chromium headless, offline and with a profile of its own.
func chromiumArgs(t *testing.T, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1400,1100"}, extra...)
}

func runChromium(t *testing.T, chromium string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, chromiumArgs(t, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

func chromiumDumpDOM(t *testing.T, chromium, url string) string {
	t.Helper()
	return string(runChromium(t, chromium, "--dump-dom", url))
}

func chromiumScreenshot(t *testing.T, chromium, url, path string) {
	t.Helper()
	runChromium(t, chromium, "--hide-scrollbars", "--screenshot="+path, url)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", path)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The DOM helpers below walk what golang.org/x/net/html parsed from
// Chromium's serialisation of the live DOM.

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n == nil {
		return nil
	}
	for c := range n.Descendants() {
		if match(c) {
			out = append(out, c)
		}
	}
	return out
}

func findFirst(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n == nil {
		return nil
	}
	for c := range n.Descendants() {
		if match(c) {
			return c
		}
	}
	return nil
}

func byID(n *html.Node, id string) *html.Node {
	return findFirst(n, func(c *html.Node) bool { return attr(c, "id") == id })
}

func hasClass(class string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		return n.Type == html.ElementNode && strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
	}
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// textOf is the text a user reads in n, with runs of white space as one.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
