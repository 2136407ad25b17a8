//go:build vmguest

package guest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// Main classes of the stand-ins in test/java.
const executorClass = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

// makeCgroup creates the cgroup rel under /sys/fs/cgroup with its memory
// limit (0: max), handing the memory controller down every level above
// it, as the kubelet and systemd do.
//
// The top level's pages are protected from the machine's reclaim
// (memory.min), as run.sh protects the guest's own: without swap, a
// machine out of memory otherwise evicts and reads back the programs'
// pages (over 9p, under emulation) for minutes before the kernel gives up
// and kills. A container's own limit is unaffected.
func makeCgroup(rel string, limit uint64) (string, error) {
	dir := "/sys/fs/cgroup"
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
			return "", fmt.Errorf("memory controller below %s: %w", dir, err)
		}
		dir = filepath.Join(dir, p)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if i == 0 {
			if err := os.WriteFile(filepath.Join(dir, "memory.min"), []byte("max"), 0o644); err != nil {
				return "", err
			}
		}
		if i < len(parts)-1 {
			continue
		}
		max := "max"
		if limit > 0 {
			max = strconv.FormatUint(limit, 10)
		}
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(max), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// oomKills is a cgroup's own count of OOM kills (memory.events).
func oomKills(dir string) uint64 {
	b, _ := os.ReadFile(filepath.Join(dir, "memory.events"))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}

// jvmOptions say how to start a stand-in.
type jvmOptions struct {
	CgroupDir string
	JVMArgs   []string
	Args      []string // after the executor's identity
	// Victim raises the JVM's oom_score_adj to 1000, so that a
	// machine-wide OOM kills it and nothing else.
	Victim bool
}

// jvm is a running stand-in: a JVM as in a container, with its own pid
// and mount namespaces and a private /tmp, so that no other JVM's start
// deletes its hsperfdata file after its end (which would make a SIGKILL
// look like an orderly exit).
type jvm struct {
	c    *vmreport.Case
	cmd  *exec.Cmd
	done chan struct{}
	exit int // as a shell reports it (128+signal); set before done is closed
}

func startJVM(g *guest, name string, c *vmreport.Case, o jvmOptions) (*jvm, error) {
	c.ExitCode = -1
	c.CgroupDir = o.CgroupDir
	// A JVM's fatal error report goes to its stdout and a file of its own:
	// both are kept in the output directory, with its stderr.
	errorFile := "-XX:ErrorFile=" + filepath.Join(g.out, name+"-hs_err_pid%p.log")
	java := append([]string{"java", errorFile, "-cp", g.classes}, o.JVMArgs...)
	java = append(java, executorClass)
	java = append(java, o.Args...)
	java = append(java, "--executor-id", c.ExecutorID, "--app-id", c.AppID)
	script := "echo $$ > " + filepath.Join(o.CgroupDir, "cgroup.procs") + " && mount -t tmpfs tmpfs /tmp && "
	if o.Victim {
		script += "echo 1000 > /proc/self/oom_score_adj && "
	}
	// The shell stays, as a container's entrypoint script does, and passes
	// the JVM's end on as its exit code: unshare reports a signal that
	// killed its child only as a failure.
	script += strings.Join(java, " ") + "; exit $?"
	cmd := exec.Command("unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private", "sh", "-c", script)
	stderr, err := appendTo(filepath.Join(g.out, name+".stderr"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderr
	output, err := appendTo(filepath.Join(g.out, name+".stdout"))
	if err != nil {
		stderr.Close()
		return nil, err
	}
	stdout := &readyWatch{w: output, ready: make(chan struct{})}
	cmd.Stdout = stdout
	// The pid namespace ends with its shell, and every holder of the
	// pipe with it; the delay only bounds a wait that cannot happen.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	j := &jvm{c: c, cmd: cmd, done: make(chan struct{})}
	g.cleanup(j.kill)
	go func() {
		_ = cmd.Wait()
		stderr.Close()
		output.Close()
		j.exit = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			j.exit = 128 + int(ws.Signal())
		}
		close(j.done)
	}()
	ready := stdout.ready
	select {
	case <-ready:
	case <-j.done:
		return nil, &endedEarly{name: name, exit: j.exit}
	case <-time.After(3 * time.Minute):
		return nil, fmt.Errorf("%s not ready after 3 minutes", name)
	}
	c.PID = testjvm.Descendant(cmd.Process.Pid, "java")
	if c.PID == 0 {
		return nil, fmt.Errorf("%s: no java process under pid %d", name, cmd.Process.Pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", c.PID))
	if err != nil {
		return nil, err
	}
	c.ProcCgroup = string(b)
	c.Cgroup = strings.TrimSpace(strings.TrimPrefix(c.ProcCgroup, "0::"))
	return j, nil
}

// readyWatch passes a stand-in's stdout on and closes ready at its line
// "ready pid=…".
type readyWatch struct {
	w       io.Writer
	line    []byte
	ready   chan struct{}
	isReady bool
}

func (r *readyWatch) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != '\n' {
			r.line = append(r.line, b)
			continue
		}
		if !r.isReady && bytes.HasPrefix(r.line, []byte("ready pid=")) {
			r.isReady = true
			close(r.ready)
		}
		r.line = r.line[:0]
	}
	return r.w.Write(p)
}

// endedEarly: the JVM ended before it said it was ready.
type endedEarly struct {
	name string
	exit int
}

func (e *endedEarly) Error() string {
	return fmt.Sprintf("%s ended before it was ready (exit %d)", e.name, e.exit)
}

// appendTo opens a log file for appending: a stand-in started again adds
// to what the first start left.
func appendTo(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// wait waits for the JVM's end, at most d, and records it in the case.
func (j *jvm) wait(d time.Duration) bool {
	select {
	case <-j.done:
		j.c.ExitCode = j.exit
		return true
	case <-time.After(d):
		return false
	}
}

func (j *jvm) signal(sig syscall.Signal) { _ = syscall.Kill(j.c.PID, sig) }

func (j *jvm) kill() {
	_ = syscall.Kill(j.cmd.Process.Pid, syscall.SIGKILL)
	if j.c.PID > 0 {
		_ = syscall.Kill(j.c.PID, syscall.SIGKILL)
	}
	j.wait(10 * time.Second)
}
