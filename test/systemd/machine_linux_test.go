// Package systemd runs the release archive's unit under Debian's systemd:
// a Debian root (debootstrap, `make systemd-root`) booted with
// `systemd-nspawn --boot`, the archive installed into it by the EMR
// bootstrap action, the unit started as a dynamic user, another user's JVM read
// through it, a kernel OOM kill seen by its oom collector, a restart and a
// stop, and `systemd-analyze security`'s judgement of the unit.
//
// make test passes the root as SYSTEMD_ROOT and the archive as
// RELEASE_ARCHIVE.
package systemd

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// machine is a Debian root booted under systemd-nspawn: its own pid, mount,
// ipc, uts, cgroup and network namespaces (loopback only). Its changes go
// to a tmpfs (--volatile=overlay): the cached root is never written.
type machine struct {
	name   string
	leader int                  // host pid of the machine's systemd
	memory testenv.MemoryCgroup // the machine's memory cgroup: its cgroup namespace's root
	out    *testenv.Buffer      // nspawn's and the console's output
	nspawn *exec.Cmd
}

// bind is a host path mounted read-only into the machine at the same path
// (or at Dest).
type bind struct{ Src, Dest string }

// bootMachine boots root with systemd and waits until the system is up.
//
// systemd-nspawn runs here without a systemd on the host (--register=no,
// --keep-unit: no machined, no scope). The host has cgroup v1 with the
// unified hierarchy beside it (hybrid); nspawn gives the machine the same,
// with its own cgroup namespace rooted at the cgroups nspawn starts in. So
// nspawn starts in cgroups of its own in the name=systemd, unified and
// memory hierarchies: the machine's systemd makes its units below them,
// and a memory cgroup made below the machine's is, inside, a path like
// /leak. nspawn mounts the v1 controllers read-only in the machine, as
// they are in an unprivileged container: systemd there cannot set the
// unit's MemoryMax or TasksMax (the unified hierarchy has no controllers on
// this host), which a VM with cgroup v2 would.
//
// nspawn's default capability set leaves out CAP_SYSLOG, which a VM's
// init has and the unit grants; --capability adds it. /dev/kmsg is not in
// nspawn's /dev: it is bound from the host.
func bootMachine(t *testing.T, root string, binds ...bind) *machine {
	t.Helper()
	nspawn := testenv.RequireTool(t, "systemd-nspawn")
	testenv.RequireTool(t, "nsenter")
	m := &machine{name: "ee-" + randomHex(t, 4), out: &testenv.Buffer{}}
	m.memory = testenv.NewMemoryCgroup(t, 4<<30)
	procs := []string{m.memory.Procs()}
	for _, h := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"} {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			testenv.Unavailable(t, "no %s hierarchy: this harness boots systemd on a cgroup v1 (hybrid) host: %v", h, err)
		}
		dir := filepath.Join(h, m.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testenv.RemoveCgroupTree(t, dir) })
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}

	args := []string{"--boot", "--directory=" + root, "--volatile=overlay", "--machine=" + m.name,
		"--register=no", "--keep-unit", "--console=pipe", "--link-journal=no", "--private-network",
		"--resolv-conf=off", "--timezone=off", "--capability=CAP_SYSLOG", "--bind-ro=/dev/kmsg"}
	for _, b := range binds {
		dest := b.Dest
		if dest == "" {
			dest = b.Src
		}
		args = append(args, "--bind-ro="+b.Src+":"+dest)
	}
	// The shell joins the machine's cgroups, then becomes nspawn.
	script := ""
	for _, p := range procs {
		script += fmt.Sprintf("echo $$ > %s && ", p)
	}
	script += `exec "$@"`
	m.nspawn = exec.Command("sh", append([]string{"-c", script, "sh", nspawn}, args...)...)
	m.nspawn.Stdout, m.nspawn.Stderr = m.out, m.out
	m.nspawn.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Pdeathsig follows the thread that started nspawn, not the test: that
	// thread is kept, locked to the goroutine that waits for nspawn, so that
	// no other goroutine's end can end it.
	done, started := make(chan struct{}), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(done)
		err := m.nspawn.Start()
		started <- err
		if err == nil {
			_ = m.nspawn.Wait()
		}
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM to nspawn powers the machine off; its systemd stops
		// every unit first.
		_ = m.nspawn.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			_ = m.nspawn.Process.Kill()
			<-done
			t.Errorf("the machine did not power off within 90 s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("systemd-nspawn output:\n%s", m.out.String())
		}
	})

	testenv.WaitFor(t, 60*time.Second, "the machine's systemd to start", func() bool {
		select {
		case <-done:
			t.Fatalf("systemd-nspawn exited: %v\n%s", m.nspawn.ProcessState, m.out.String())
		default:
		}
		m.leader = testjvm.Descendant(m.nspawn.Process.Pid, "systemd")
		return m.leader != 0
	})
	// systemctl answers once systemd listens on its private socket;
	// is-system-running --wait then returns when the boot is over: running,
	// or degraded when a unit failed (that is listed, and fails the test).
	testenv.WaitFor(t, 60*time.Second, "the machine's systemd to answer systemctl", func() bool {
		_, err := m.run(t, "test", "-S", "/run/systemd/private")
		return err == nil
	})
	state, _ := m.run(t, "systemctl", "is-system-running", "--wait")
	if strings.TrimSpace(state) != "running" {
		failed, _ := m.run(t, "systemctl", "--failed", "--no-pager")
		t.Fatalf("the machine booted %q, want running:\n%s", strings.TrimSpace(state), failed)
	}
	return m
}

// run runs a command inside the machine (all its namespaces, as root) and
// returns its output and error; the command's own cgroups stay the
// caller's.
func (m *machine) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("nsenter", append(m.nsenter(), args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), fmt.Errorf("%s in the machine: %w: %s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}

// mustRun is run, failing the test on an error.
func (m *machine) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := m.run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nsenter is nsenter's arguments for the machine's namespaces.
func (m *machine) nsenter() []string {
	return []string{"--target", fmt.Sprint(m.leader), "--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup", "--"}
}

// startJVM starts a stand-in JVM inside the machine as user, in the memory
// cgroup cg (below the machine's), with the host's JDK (bound into the
// machine at the same path) first on PATH.
func (m *machine) startJVM(t *testing.T, user, jdkBin string, cg testenv.MemoryCgroup, o testjvm.Options) *testjvm.JVM {
	t.Helper()
	// The machine's memory hierarchy is read-only inside: the process
	// joins cg from the host, before it enters the machine.
	o.Wrapper = append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.Procs(), "nsenter"}, m.nsenter()...)
	o.Wrapper = append(o.Wrapper, "setpriv", "--reuid="+user, "--regid="+user, "--clear-groups",
		"env", "-i", "PATH="+jdkBin+":/usr/bin:/bin", "HOME=/")
	return testjvm.Start(t, o)
}

// dial connects to address from inside the machine's network namespace:
// a locked thread enters it, dials, and returns to the test's namespace
// before it is unlocked. A goroutine that ends locked ends its thread, and
// the thread that started nspawn may be that one: its end would send
// nspawn its Pdeathsig, leaving the machine's systemd running orphaned.
func (m *machine) dial(network, address string) (net.Conn, error) {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", m.leader))
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer own.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("entering the machine's network namespace: %w", err)}
			return
		}
		c, err := net.DialTimeout(network, address, 10*time.Second)
		// Back in the test's namespace the thread is like any other; if it
		// cannot go back, it stays locked and ends with the goroutine.
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.conn, r.err
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
