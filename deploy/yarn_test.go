package deploy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// yarnRelease lays out what a user uploads next to the script: the
// exporter binary and the systemd unit and defaults, as released.
func yarnRelease(t *testing.T) (dir, sum string) {
	t.Helper()
	dir = t.TempDir()
	bin, err := os.ReadFile(testenv.ExporterBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"executor_exporter": bin}
	for _, f := range []string{"executor_exporter.service", "executor_exporter.default"} {
		b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "systemd", f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := sha256.Sum256(bin)
	return dir, hex.EncodeToString(h[:])
}

// runYARNScript runs an install script against a temporary root with a
// systemctl that records its calls; it returns the root, the calls file
// and the script's error.
func runYARNScript(t *testing.T, script string, env []string, args ...string) (root, calls string, err error) {
	t.Helper()
	root = t.TempDir()
	calls = filepath.Join(t.TempDir(), "systemctl.log")
	fake := filepath.Join(t.TempDir(), "systemctl")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$*\" >> '"+calls+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(testenv.RepoRoot(), "deploy", "yarn", script)}, args...)...)
	cmd.Env = append(os.Environ(), append(env, "EXECUTOR_EXPORTER_ROOT="+root, "SYSTEMCTL="+fake, "EXECUTOR_EXPORTER_WAIT_SECONDS=0.05")...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err != nil {
		t.Logf("%s: %v\n%s", script, err, out.String())
	}
	return root, calls, err
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
// modes, the unit is the repository's, and ARGS holds the YARN flags (each
// a flag the exporter has).
func checkYARNInstall(t *testing.T, root string, wantArgs ...string) {
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
	// The installed binary is the one given, and runs.
	if out, err := exec.Command(filepath.Join(root, "usr/local/bin/executor_exporter"), "--version").CombinedOutput(); err != nil {
		t.Errorf("installed binary: %v: %s", err, out)
	}
}

func TestEMRBootstrap(t *testing.T) {
	release, sum := yarnRelease(t)
	root, calls, err := runYARNScript(t, "emr-bootstrap.sh", nil,
		"--source", release, "--sha256", sum, "--args", "--jvm.sample-interval=15s")
	if err != nil {
		t.Fatal(err)
	}
	checkYARNInstall(t, root, "--yarn.conf-dir=/etc/hadoop/conf", "--web.listen-address=:9482", "--jvm.sample-interval=15s")
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

func TestDataprocInit(t *testing.T) {
	release, sum := yarnRelease(t)
	root, calls, err := runYARNScript(t, "dataproc-init.sh",
		[]string{"EXECUTOR_EXPORTER_SOURCE=file://" + release, "EXECUTOR_EXPORTER_SHA256=" + sum})
	if err != nil {
		t.Fatal(err)
	}
	checkYARNInstall(t, root, "--yarn.conf-dir=/etc/hadoop/conf", "--web.listen-address=:9482")
	if got := readCalls(t, calls); got != "daemon-reload\nenable --now executor_exporter\n" {
		t.Errorf("systemctl calls %q", got)
	}
}

// A binary that is not the one named, or no source: nothing installed,
// nothing started.
func TestYARNScriptsRefuse(t *testing.T) {
	release, _ := yarnRelease(t)
	wrong := strings.Repeat("0", 64)
	for _, tc := range []struct {
		script string
		env    []string
		args   []string
	}{
		{"emr-bootstrap.sh", nil, []string{"--source", release, "--sha256", wrong}},
		{"emr-bootstrap.sh", nil, nil},
		{"dataproc-init.sh", []string{"EXECUTOR_EXPORTER_SOURCE=" + release, "EXECUTOR_EXPORTER_SHA256=" + wrong}, nil},
		{"dataproc-init.sh", []string{"EXECUTOR_EXPORTER_SOURCE=" + filepath.Join(release, "missing")}, nil},
	} {
		root, calls, err := runYARNScript(t, tc.script, tc.env, tc.args...)
		if err == nil {
			t.Errorf("%s %v %v: succeeded", tc.script, tc.env, tc.args)
		}
		if _, err := os.Stat(filepath.Join(root, "usr/local/bin/executor_exporter")); err == nil {
			t.Errorf("%s %v %v: installed the binary", tc.script, tc.env, tc.args)
		}
		if got := readCalls(t, calls); got != "" {
			t.Errorf("%s %v %v: systemctl %q", tc.script, tc.env, tc.args, got)
		}
	}
}
