package deploy

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// The systemd unit gives the exporter three capabilities, the DaemonSet
// two of them (not SYSLOG: no capability opens /dev/kmsg in an
// unprivileged container; test/kube's TestRealNode shows it on a kubelet).
// These tests check on this machine that each is needed and that they are
// enough: a JVM of another user is exported with all three and not
// exported without SYS_PTRACE or without DAC_READ_SEARCH; /dev/kmsg opens
// with SYSLOG and not without it.
var deployedCaps = []string{"sys_ptrace", "dac_read_search", "syslog"}

// boundedCommand runs argv as uid 0 with its capability bounding set (and
// so its permitted and effective sets) cut to caps, as the container
// runtime does for the DaemonSet.
func boundedCommand(t *testing.T, caps []string, argv ...string) *exec.Cmd {
	t.Helper()
	setpriv := testenv.RequireTool(t, "setpriv")
	bounding := "-all"
	for _, c := range caps {
		bounding += ",+" + c
	}
	args := append([]string{"--reuid=0", "--regid=0", "--clear-groups", "--inh-caps=-all", "--bounding-set=" + bounding, "--"}, argv...)
	return exec.Command(setpriv, args...)
}

// ambientCommand runs argv as an unprivileged uid holding caps as ambient
// capabilities, as the systemd unit does (DynamicUser=yes,
// AmbientCapabilities=...).
func ambientCommand(t *testing.T, uid string, caps []string, argv ...string) *exec.Cmd {
	t.Helper()
	setpriv := testenv.RequireTool(t, "setpriv")
	args := []string{"--reuid=" + uid, "--regid=" + uid, "--clear-groups"}
	if len(caps) > 0 {
		set := "+" + strings.Join(caps, ",+")
		args = append(args, "--inh-caps="+set, "--ambient-caps="+set)
	}
	args = append(append(args, "--"), argv...)
	return exec.Command(setpriv, args...)
}

func without(all []string, drop string) []string {
	var out []string
	for _, c := range all {
		if c != drop {
			out = append(out, c)
		}
	}
	return out
}

func TestCapabilitiesForOtherUsersJVMs(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "setpriv")
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("a non-root user is needed to own the JVM: %v", err)
	}
	// The JVM runs as nobody: it must be able to read the compiled classes.
	cp := testjvm.Classpath(t)
	if err := filepath.Walk(cp, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	jvm := testjvm.Start(t, testjvm.Options{
		JVMArgs: []string{"-Xmx32m", "-XX:+UseSerialGC"},
		Args:    []string{"--executor-id", "3", "--app-id", "app-caps", "--exit-after-s", "300"},
		Wrapper: []string{"setpriv", "--reuid=" + nobody.Uid, "--regid=" + nobody.Gid, "--clear-groups", "--"},
	})
	if uid := procUID(t, jvm.PID); uid != nobody.Uid {
		t.Fatalf("JVM %d runs as uid %s, want %s", jvm.PID, uid, nobody.Uid)
	}

	cases := []struct {
		name     string
		caps     []string
		ambient  bool // run as an unprivileged uid with ambient caps (systemd) instead of uid 0 (DaemonSet)
		exported bool
	}{
		{"all three", deployedCaps, false, true},
		{"without SYS_PTRACE", without(deployedCaps, "sys_ptrace"), false, false},
		{"without DAC_READ_SEARCH", without(deployedCaps, "dac_read_search"), false, false},
		{"unprivileged uid with the three as ambient capabilities", deployedCaps, true, true},
		{"unprivileged uid without capabilities", nil, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := testenv.FreeAddr(t)
			kmsg := filepath.Join(t.TempDir(), "kmsg")
			if err := os.WriteFile(kmsg, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			argv := []string{testenv.ExporterBinary(t), "--web.listen-address=" + addr,
				"--cloud.provider=none", "--oom.kmsg-path=" + kmsg, "--jvm.sample-interval=0", "--log.level=debug"}
			cmd := boundedCommand(t, c.caps, argv...)
			if c.ambient {
				// Neither the JVM's uid nor root.
				cmd = ambientCommand(t, "12345", c.caps, argv...)
			}
			logs := &strings.Builder{}
			cmd.Stderr = logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

			// Wait until the jvm collector has run at least once, then give
			// it a few scrapes to find the JVM.
			exported := false
			deadline := time.Now().Add(30 * time.Second)
			scrapesAfterReady := 0
			for time.Now().Before(deadline) && scrapesAfterReady < 10 && !exported {
				families := scrapeFamilies(addr)
				if ok := collectorSucceeded(families, "jvm"); ok {
					scrapesAfterReady++
					exported = hasPID(families, jvm.PID)
				}
				time.Sleep(300 * time.Millisecond)
			}
			if scrapesAfterReady == 0 {
				t.Fatalf("the jvm collector never succeeded; log:\n%s", logs)
			}
			if exported != c.exported {
				t.Errorf("JVM of uid %s exported=%v with capabilities %v, want %v; log:\n%s",
					nobody.Uid, exported, c.caps, c.exported, logs)
			}
		})
	}
}

func TestCapabilitySyslogForKmsg(t *testing.T) {
	testenv.RequireRoot(t)
	restrict, err := os.ReadFile("/proc/sys/kernel/dmesg_restrict")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		t.Fatalf("/dev/kmsg: %v", err)
	}
	dd := testenv.RequireTool(t, "dd")
	open := func(caps []string) error {
		return boundedCommand(t, caps, dd, "if=/dev/kmsg", "of=/dev/null", "count=0", "status=none").Run()
	}
	if err := open(deployedCaps); err != nil {
		t.Errorf("/dev/kmsg does not open with %v: %v", deployedCaps, err)
	}
	err = open(without(deployedCaps, "syslog"))
	switch strings.TrimSpace(string(restrict)) {
	case "1":
		if err == nil {
			t.Error("/dev/kmsg opened without CAP_SYSLOG although kernel.dmesg_restrict=1")
		}
	default:
		// With dmesg_restrict=0 anyone may read the kernel log; SYSLOG is
		// then unneeded here, but stays for the many hosts that restrict it.
		t.Logf("kernel.dmesg_restrict=%s: /dev/kmsg needs no capability on this machine (open without SYSLOG: %v)", strings.TrimSpace(string(restrict)), err)
	}
}

func procUID(t *testing.T, pid int) string {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	t.Fatalf("no Uid line for pid %d", pid)
	return ""
}

func collectorSucceeded(families map[string]*dto.MetricFamily, name string) bool {
	f := families["executor_scrape_collector_success"]
	if f == nil {
		return false
	}
	for _, m := range f.Metric {
		if labelValue(m, "collector") == name {
			return m.GetGauge().GetValue() == 1
		}
	}
	return false
}

func hasPID(families map[string]*dto.MetricFamily, pid int) bool {
	f := families["executor_jvm_info"]
	if f == nil {
		return false
	}
	for _, m := range f.Metric {
		if labelValue(m, "pid") == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}
