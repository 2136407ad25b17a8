// Package testjvm starts real JVMs for tests: the stand-in Spark executor
// and driver under test/java, compiled once per test binary. It is imported
// only from _test.go files and benchmarks.
package testjvm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// Main classes of the stand-ins in test/java.
const (
	ExecutorClass = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
	// YarnExecutorClass is the main class of an executor container on
	// YARN; it takes YARN's arguments (YarnExecutorArgs) before or among
	// the stand-in's.
	YarnExecutorClass = "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"
	DriverClass       = "org.apache.spark.deploy.SparkSubmit"
	IdleClass         = "standin.Idle"
)

// YarnExecutorArgs are the arguments Spark's ApplicationMaster gives an
// executor container (ExecutorRunnable.prepareCommand).
func YarnExecutorArgs(appID, executorID string) []string {
	return []string{"--driver-url", "spark://CoarseGrainedScheduler@node-0:40123", "--executor-id", executorID,
		"--hostname", "node-1", "--cores", "1", "--app-id", appID, "--resourceProfileId", "0"}
}

// RequireJava stops the test when java/javac are missing: a failure in CI
// (where they must be installed), a skip with the reason elsewhere.
func RequireJava(t testing.TB) {
	t.Helper()
	testenv.RequireTool(t, "java")
	testenv.RequireTool(t, "javac")
}

// RepoRoot returns the repository root.
func RepoRoot() string { return testenv.RepoRoot() }

var (
	compileOnce sync.Once
	classDir    string
	compileErr  error
)

// Classpath compiles test/java once and returns the class directory.
func Classpath(t testing.TB) string {
	t.Helper()
	RequireJava(t)
	compileOnce.Do(func() {
		classDir, compileErr = os.MkdirTemp("", "executor-exporter-java-")
		if compileErr != nil {
			return
		}
		var sources []string
		root := filepath.Join(RepoRoot(), "test", "java")
		compileErr = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.HasSuffix(p, ".java") {
				sources = append(sources, p)
			}
			return err
		})
		if compileErr != nil {
			return
		}
		out, err := exec.Command("javac", append([]string{"-d", classDir}, sources...)...).CombinedOutput()
		if err != nil {
			compileErr = fmt.Errorf("javac: %v: %s", err, out)
		}
	})
	if compileErr != nil {
		t.Fatal(compileErr)
	}
	return classDir
}

// Options say how to start a JVM.
type Options struct {
	MainClass string   // default ExecutorClass
	JVMArgs   []string // e.g. -Xmx64m, -XX:+UseG1GC
	Args      []string // program arguments, Spark's and the stand-in's
	// Cgroup, when set, is a cgroup.procs file the JVM's shell joins before
	// exec'ing java, so the JVM lives in that cgroup from its first page.
	Cgroup string
	// Wrapper is a command prefix, e.g. unshare ... sh -c; the JVM command
	// line is appended as one shell-quoted string when Shell is true.
	Wrapper []string
	// Shell runs "sh -c <prelude> exec java ..."; Prelude runs first.
	Prelude string
}

// JVM is a running test JVM.
type JVM struct {
	Cmd   *exec.Cmd
	PID   int // host pid of the java process
	NSPID int // pid inside its own pid namespace, as it printed it
	Lines chan string
	done  chan struct{}
	err   error
}

// Start starts a JVM, waits until it says it is ready, and kills it (and
// its process group) when the test ends.
func Start(t testing.TB, o Options) *JVM {
	t.Helper()
	cp := Classpath(t)
	if o.MainClass == "" {
		o.MainClass = ExecutorClass
	}
	javaCmd := append([]string{"java", "-cp", cp}, o.JVMArgs...)
	javaCmd = append(javaCmd, o.MainClass)
	javaCmd = append(javaCmd, o.Args...)

	var argv []string
	switch {
	case o.Cgroup != "" || o.Prelude != "" || len(o.Wrapper) > 0:
		script := o.Prelude
		if o.Cgroup != "" {
			script += fmt.Sprintf("echo $$ > %s && ", shellQuote(o.Cgroup))
		}
		script += "exec " + shellJoin(javaCmd)
		argv = append(append([]string{}, o.Wrapper...), "sh", "-c", script)
	default:
		argv = javaCmd
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	j := &JVM{Cmd: cmd, Lines: make(chan string, 64), done: make(chan struct{})}
	t.Cleanup(j.Kill)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case j.Lines <- sc.Text():
			default:
			}
		}
		close(j.Lines)
	}()
	go func() { j.err = cmd.Wait(); close(j.done) }()

	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-j.Lines:
			if !ok {
				<-j.done
				t.Fatalf("JVM %v exited before it was ready: %v", argv, j.err)
			}
			if rest, found := strings.CutPrefix(line, "ready pid="); found {
				j.NSPID, _ = strconv.Atoi(rest)
				j.PID = Descendant(cmd.Process.Pid, "java")
				if j.PID == 0 {
					t.Fatalf("no java process under pid %d", cmd.Process.Pid)
				}
				return j
			}
		case <-timeout:
			t.Fatalf("JVM %v not ready after 60s", argv)
		}
	}
}

// Kill ends the JVM and everything in its process group.
func (j *JVM) Kill() {
	_ = syscall.Kill(-j.Cmd.Process.Pid, syscall.SIGKILL)
	if j.PID > 0 {
		_ = syscall.Kill(j.PID, syscall.SIGKILL)
	}
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
	}
}

// Done is closed when the JVM (or its wrapper) exits.
func (j *JVM) Done() <-chan struct{} { return j.done }

// Err is the exit error; read it after Done is closed.
func (j *JVM) Err() error { return j.err }

// ExitCode waits up to timeout for the JVM (or its wrapper) to end and
// returns its exit code, 128 + the signal when a signal ended it, as a
// shell reports it.
func (j *JVM) ExitCode(tb testing.TB, timeout time.Duration) int {
	tb.Helper()
	select {
	case <-j.done:
	case <-time.After(timeout):
		tb.Fatalf("JVM %d did not end within %v", j.PID, timeout)
	}
	var ee *exec.ExitError
	if !errors.As(j.err, &ee) {
		if j.err != nil {
			tb.Fatal(j.err)
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// Descendant returns root if its command name is comm, else its first
// descendant, breadth first, that has it (the wrappers fork: unshare -f,
// sh); 0 if none has.
func Descendant(root int, comm string) int {
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if name, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(name)) == comm {
			return pid
		}
		queue = append(queue, children(pid)...)
	}
	return 0
}

func children(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: ppid follows the last ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
				kids = append(kids, child)
			}
		}
	}
	return kids
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}
