package deploy

import (
	"bytes"
	"debug/elf"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// serveRelease serves dir as a release URL over HTTP, as GitHub serves a
// release's assets.
func serveRelease(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runYARNScript runs an install script against a temporary root with a
// systemctl that records its calls; it returns the root, the calls file,
// the script's output and its error.
func runYARNScript(t *testing.T, script string, env []string, args ...string) (root, calls, out string, err error) {
	t.Helper()
	root = t.TempDir()
	calls = filepath.Join(t.TempDir(), "systemctl.log")
	fake := filepath.Join(t.TempDir(), "systemctl")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$*\" >> '"+calls+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(testenv.RepoRoot(), "deploy", "yarn", script)}, args...)...)
	cmd.Env = append(os.Environ(), append(env, "EXECUTOR_EXPORTER_ROOT="+root, "SYSTEMCTL="+fake, "EXECUTOR_EXPORTER_WAIT_SECONDS=0.05",
		// The waiter for yarn-site.xml outlives the script: bound it to the
		// test's own wait, so no test leaves it behind for an hour.
		"EXECUTOR_EXPORTER_WAIT_LIMIT_SECONDS=40")...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err = cmd.Run()
	if err != nil {
		t.Logf("%s: %v\n%s", script, err, b.String())
	}
	return root, calls, b.String(), err
}

func readCalls(t *testing.T, calls string) string {
	t.Helper()
	b, err := os.ReadFile(calls)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// checkYARNInstall: the binary, unit and defaults are installed with their
// modes, the binary is the archive's for machine, the unit is the
// repository's, and ARGS holds the YARN flags (each a flag the exporter
// has).
func checkYARNInstall(t *testing.T, root string, machine elf.Machine, wantArgs ...string) {
	t.Helper()
	for path, mode := range map[string]os.FileMode{
		"usr/local/bin/executor_exporter":              0o755,
		"etc/systemd/system/executor_exporter.service": 0o644,
		"etc/default/executor_exporter":                0o644,
	} {
		fi, err := os.Stat(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), mode)
		}
	}
	unit, _ := os.ReadFile(filepath.Join(root, "etc/systemd/system/executor_exporter.service"))
	want, _ := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "systemd", "executor_exporter.service"))
	if !bytes.Equal(unit, want) {
		t.Error("the installed unit differs from deploy/systemd/executor_exporter.service")
	}
	env, _ := os.ReadFile(filepath.Join(root, "etc/default/executor_exporter"))
	m := regexp.MustCompile(`(?m)^ARGS="([^"]*)"$`).FindAllSubmatch(env, -1)
	if len(m) != 1 {
		t.Fatalf("ARGS set %d times in\n%s", len(m), env)
	}
	args := strings.Fields(string(m[0][1]))
	for _, w := range wantArgs {
		if !strings.Contains(" "+string(m[0][1])+" ", " "+w+" ") {
			t.Errorf("ARGS %q lacks %s", m[0][1], w)
		}
	}
	checkFlagsExist(t, "installed ARGS", args)
	bin := filepath.Join(root, "usr/local/bin/executor_exporter")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("installed binary: %v", err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("installed binary is for %v, want %v", f.Machine, machine)
	}
	// The one this machine runs reports the release's version.
	if machine == elf.EM_X86_64 {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "version "+testenv.Version(t)+" ") {
			t.Errorf("installed binary --version: %v: %s", err, out)
		}
	}
}

func TestEMRBootstrap(t *testing.T) {
	url := serveRelease(t, testenv.ReleaseDir(t))
	root, calls, _, err := runYARNScript(t, "emr-bootstrap.sh", []string{"EXECUTOR_EXPORTER_MACHINE=x86_64"},
		"--release-url", url, "--args", "--jvm.sample-interval=15s")
	if err != nil {
		t.Fatal(err)
	}
	checkYARNInstall(t, root, elf.EM_X86_64, "--yarn.conf-dir=/etc/hadoop/conf", "--web.listen-address=:9482", "--jvm.sample-interval=15s")
	if got := readCalls(t, calls); got != "daemon-reload\nenable --now executor_exporter\n" {
		t.Errorf("systemctl calls %q", got)
	}
	// EMR writes yarn-site.xml after the bootstrap actions: the service is
	// restarted once it is there.
	conf := filepath.Join(root, "etc/hadoop/conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "yarn-site.xml"), []byte("<configuration/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "the restart after yarn-site.xml appeared", func() bool {
		return strings.HasSuffix(readCalls(t, calls), "restart executor_exporter\n")
	})
}

// A Graviton node gets the arm64 archive; the release URL may also be a
// directory (an S3 prefix copied to the node, or a mounted mirror).
func TestEMRBootstrapARM64(t *testing.T) {
	root, _, _, err := runYARNScript(t, "emr-bootstrap.sh", []string{"EXECUTOR_EXPORTER_MACHINE=aarch64"},
		"--release-url", testenv.ReleaseDir(t), "--version", testenv.Version(t))
	if err != nil {
		t.Fatal(err)
	}
	checkYARNInstall(t, root, elf.EM_AARCH64, "--yarn.conf-dir=/etc/hadoop/conf")
}

func TestDataprocInit(t *testing.T) {
	url := serveRelease(t, testenv.ReleaseDir(t))
	for machine, want := range map[string]elf.Machine{"x86_64": elf.EM_X86_64, "aarch64": elf.EM_AARCH64} {
		root, calls, _, err := runYARNScript(t, "dataproc-init.sh",
			[]string{"EXECUTOR_EXPORTER_RELEASE_URL=" + url, "EXECUTOR_EXPORTER_MACHINE=" + machine})
		if err != nil {
			t.Fatal(err)
		}
		checkYARNInstall(t, root, want, "--yarn.conf-dir=/etc/hadoop/conf", "--web.listen-address=:9482")
		if got := readCalls(t, calls); got != "daemon-reload\nenable --now executor_exporter\n" {
			t.Errorf("%s: systemctl calls %q", machine, got)
		}
	}
}

// Each script installs, by default, the release it comes from: the
// VERSION file's.
func TestYARNScriptsDefaultVersion(t *testing.T) {
	want := testenv.Version(t)
	re := regexp.MustCompile(`(?m)^\s*version="(?:\$\{version:-)?([0-9][^"}]*)\}?"$`)
	for _, script := range []string{"emr-bootstrap.sh", "dataproc-init.sh"} {
		b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "yarn", script))
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no default version", script)
			continue
		}
		if string(m[1]) != want {
			t.Errorf("%s installs %s by default; VERSION is %s", script, m[1], want)
		}
	}
}

// An archive that does not match sha256sums.txt, a release without the
// node's archive, a machine without a release: a clear error, nothing
// installed, nothing started.
func TestYARNScriptsRefuse(t *testing.T) {
	release := testenv.ReleaseDir(t)
	version := testenv.Version(t)
	amd64 := "executor_exporter-" + version + ".linux-amd64.tar.gz"

	// A release whose sha256sums.txt gives the amd64 archive another sum.
	bad := t.TempDir()
	archive, err := os.ReadFile(filepath.Join(release, amd64))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, amd64), archive, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "sha256sums.txt"), []byte(strings.Repeat("0", 64)+"  "+amd64+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badURL := serveRelease(t, bad)
	// A release without any sum for it.
	unlisted := t.TempDir()
	if err := os.WriteFile(filepath.Join(unlisted, amd64), archive, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unlisted, "sha256sums.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	goodURL := serveRelease(t, release)

	for _, tc := range []struct {
		script string
		env    []string
		args   []string
		want   string
	}{
		{"emr-bootstrap.sh", []string{"EXECUTOR_EXPORTER_MACHINE=x86_64"}, []string{"--release-url", badURL}, "does not match its SHA-256 in sha256sums.txt"},
		{"dataproc-init.sh", []string{"EXECUTOR_EXPORTER_MACHINE=x86_64", "EXECUTOR_EXPORTER_RELEASE_URL=" + badURL}, nil, "does not match its SHA-256 in sha256sums.txt"},
		{"emr-bootstrap.sh", []string{"EXECUTOR_EXPORTER_MACHINE=x86_64"}, []string{"--release-url", unlisted}, "sha256sums.txt lists no " + amd64},
		{"emr-bootstrap.sh", []string{"EXECUTOR_EXPORTER_MACHINE=x86_64"}, []string{"--release-url", goodURL, "--version", "9.9.9"}, "404"},
		{"dataproc-init.sh", []string{"EXECUTOR_EXPORTER_MACHINE=riscv64", "EXECUTOR_EXPORTER_RELEASE_URL=" + goodURL}, nil, "no executor_exporter release for machine riscv64"},
		{"emr-bootstrap.sh", nil, []string{"--release-url"}, ""},
	} {
		root, calls, out, err := runYARNScript(t, tc.script, tc.env, tc.args...)
		if err == nil {
			t.Errorf("%s %v %v: succeeded", tc.script, tc.env, tc.args)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s %v %v: output lacks %q:\n%s", tc.script, tc.env, tc.args, tc.want, out)
		}
		if _, err := os.Stat(filepath.Join(root, "usr/local/bin/executor_exporter")); err == nil {
			t.Errorf("%s %v %v: installed the binary", tc.script, tc.env, tc.args)
		}
		if got := readCalls(t, calls); got != "" {
			t.Errorf("%s %v %v: systemctl %q", tc.script, tc.env, tc.args, got)
		}
	}
}
