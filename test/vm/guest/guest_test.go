//go:build vmguest

// Package guest_test is what runs inside the VM that test/vm boots: the
// built exporter on a kernel with only cgroup v2, real JVMs in memory
// cgroups of the shapes nodes have, and real OOM kills, a machine-wide one
// last. It judges nothing: it makes each case happen, waits for the
// exporter to have something to say about it, and leaves the facts
// (vmreport) and the exporter's scrapes in $VM_OUT for the host's test to
// judge. It is built with the vmguest tag (go test -c), so that `go test
// ./...` on the host leaves it alone.
package guest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// guest is one run's environment and report.
type guest struct {
	out, classes, exporter string

	mu       sync.Mutex
	report   vmreport.Report
	cleanups []func()
}

func (g *guest) cleanup(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cleanups = append(g.cleanups, f)
}

func (g *guest) errorf(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.report.Errors = append(g.report.Errors, fmt.Sprintf(format, args...))
}

func (g *guest) newCase(name, app, executor string) *vmreport.Case {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := &vmreport.Case{AppID: app, ExecutorID: executor, ExitCode: -1}
	g.report.Cases[name] = c
	return c
}

// TestGuest runs every case on this machine. Cases run side by side where
// they cannot disturb each other; the interruption notice comes once the
// other ends are decided (it would make them "interrupted"), and the
// machine-wide OOM comes last.
func TestGuest(t *testing.T) {
	g := &guest{out: os.Getenv("VM_OUT"), classes: os.Getenv("VM_CLASSES"), exporter: os.Getenv("VM_EXPORTER")}
	if g.out == "" || g.classes == "" || g.exporter == "" {
		t.Fatal("VM_OUT, VM_CLASSES and VM_EXPORTER say where things are: this runs in the VM test/vm boots")
	}
	g.report.Cases = map[string]*vmreport.Case{}
	uname, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	self, _ := os.ReadFile("/proc/self/cgroup")
	ctl, _ := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
	g.report.Kernel, g.report.SelfCgroup, g.report.Controllers = strings.TrimSpace(string(uname)), string(self), strings.TrimSpace(string(ctl))
	defer func() {
		for i := len(g.cleanups) - 1; i >= 0; i-- {
			g.cleanups[i]()
		}
	}()
	defer g.writeReport(t)
	defer saveKernelLog(filepath.Join(g.out, vmreport.KernelLog))

	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	imds.Set(cloudtest.AWSInstanceTypePath, "r5.xlarge")
	if err := startExporter(g, exporterAddr, vmreport.ExporterLog, "--jvm.sample-interval=500ms", "--cloud.provider=aws",
		"--cloud.aws.metadata-url="+imds.URL, "--cloud.interruption-poll-interval=1s"); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	run(func() {
		g.oomCase("oom-native", "1", []string{"-Xmx64m", "-XX:MaxDirectMemorySize=1g"}, "--direct-leak-mb-s", "40")
		// Then the same, filling the container ten times as slowly: the
		// signals' lead over usage when the leak takes half a minute. It
		// waits for the first, so that no more than three containers
		// are full at once in the VM's memory.
		g.oomCase("oom-slow", "12", []string{"-Xmx64m", "-XX:MaxDirectMemorySize=1g"}, "--direct-leak-mb-s", "4")
	})
	run(func() {
		g.oomCase("oom-heap", "2", []string{"-Xmx1g", "-XX:-AlwaysPreTouch"}, "--heap-leak-mb-s", "40")
	})
	run(g.pysparkCase)
	run(func() {
		// The kubelet's pod slice and the runtime's container scope, as
		// the systemd cgroup driver names them.
		g.kubernetesCase("k8s-systemd", "5", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+
			strings.ReplaceAll(vmreport.SystemdPodUID, "-", "_")+".slice/cri-containerd-"+vmreport.SystemdContainerID+".scope", 288<<20)
	})
	run(func() {
		g.kubernetesCase("k8s-cgroupfs", "6", "kubepods/burstable/pod"+vmreport.CgroupfsPodUID+"/"+vmreport.CgroupfsContainerID, 0)
	})
	run(func() { g.exitCase("exit-killed", "7", syscall.SIGKILL) })
	run(func() { g.exitCase("exit-exited", "8", syscall.SIGTERM) })
	run(g.heapExhaustedCase)
	interrupted := make(chan *jvm, 1)
	run(func() { interrupted <- g.startIdle("exit-interrupted", "10") })
	wg.Wait()

	if j := <-interrupted; j != nil {
		g.interruptedCase(j, imds)
	}
	g.fastLeakCase()
	g.snapshot(vmreport.BeforeNodeOOM)
	imds.Delete(cloudtest.AWSInstanceActionPath)

	g.nodeOOMCase()
	if _, err := scrapeText(); err == nil {
		g.report.Survived = true
	}
	g.snapshot(vmreport.Final)
	if status, err := get("/status.json"); err == nil {
		_ = os.WriteFile(filepath.Join(g.out, vmreport.StatusJSON), []byte(status), 0o644)
	}
}

func (g *guest) writeReport(t *testing.T) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := json.MarshalIndent(&g.report, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.out, vmreport.File), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// saveKernelLog writes the kernel's log as /dev/kmsg holds it at the end:
// the OOM killer's reports and anything else the kernel said (quiet on
// the serial console) while the cases ran.
func saveKernelLog(path string) {
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer syscall.Close(fd)
	var log []byte
	buf := make([]byte, 8192)
	for {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EPIPE) {
			continue // records overwritten while read: the next one follows
		}
		if err != nil || n <= 0 {
			break
		}
		log = append(log, buf[:n]...)
	}
	_ = os.WriteFile(path, log, 0o644)
}

func (g *guest) snapshot(name string) {
	text, err := scrapeText()
	if err != nil {
		g.errorf("scrape for %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(g.out, name), []byte(text), 0o644); err != nil {
		g.errorf("%s: %v", name, err)
	}
}

// start makes the case's cgroup and starts its JVM; nil when either fails
// (recorded as the guest's error).
func (g *guest) start(name string, c *vmreport.Case, cgroup string, limit uint64, o jvmOptions) *jvm {
	dir, err := makeCgroup(cgroup, limit)
	if err != nil {
		g.errorf("%s: cgroup %s: %v", name, cgroup, err)
		return nil
	}
	c.CgroupLimit = limit
	o.CgroupDir = dir
	j, err := startJVM(g, name, c, o)
	var early *endedEarly
	if errors.As(err, &early) {
		// Its end is not the exporter's doing and says nothing about it:
		// its stdout, stderr and error file are kept, and the host logs why.
		c.Restarts = append(c.Restarts, err.Error())
		time.Sleep(5 * time.Second) // for the machine's other cases to move on
		j, err = startJVM(g, name, c, o)
	}
	if err != nil {
		g.errorf("%s: %v", name, err)
		return nil
	}
	return j
}

func pid(c *vmreport.Case) map[string]string { return map[string]string{"pid": strconv.Itoa(c.PID)} }

// tracked waits until the exporter exports the JVM.
func tracked(c *vmreport.Case) bool {
	return waitSample(c, "executor_jvm_info", pid(c), 1, 2*time.Minute)
}

// ended waits for the JVM's end and then for the exporter to count it.
func ended(c *vmreport.Case, j *jvm, d time.Duration) {
	if waitFor(c, "the JVM ends", d, func() bool { return j.wait(0) }) {
		waitSample(c, "executor_jvm_exits_total", pid(c), 1, time.Minute)
	}
}

// leakAfter is how long a stand-in runs before it starts to fill its
// container: time for the exporter to find it and read it, on a VM
// whose CPUs are emulated and shared by every case.
const leakAfter = "15"

// oomCase: a 192 MiB container whose JVM fills it at mbs MiB/s, through
// direct buffers (leak "--direct-leak-mb-s") or its heap
// ("--heap-leak-mb-s"), its container's signals recorded until the kill.
func (g *guest) oomCase(name, id string, jvmArgs []string, leak, mbs string) {
	c := g.newCase(name, "app-vm-oom", id)
	j := g.start(name, c, "vm-"+name, 192<<20, jvmOptions{JVMArgs: jvmArgs,
		Args: []string{"--scenario", "--leak-after-s", leakAfter, leak, mbs, "--exit-after-s", "600"}})
	if j == nil || !tracked(c) {
		return
	}
	signals := recordSignals(c, 3*time.Minute)
	g.mu.Lock()
	c.Signals = signals
	g.mu.Unlock()
	ended(c, j, 3*time.Minute)
	c.CgroupOOMKills = oomKills(c.CgroupDir)
	waitSample(c, "executor_oom_kills_total", pid(c), 1, time.Minute)
}

// pysparkCase: a Python child (a PySpark worker) grows inside its
// executor's 192 MiB container until the kernel kills it; the JVM lives.
func (g *guest) pysparkCase() {
	c := g.newCase("pyspark", "app-vm-pyspark", "3")
	j := g.start("pyspark", c, "vm-pyspark", 192<<20, jvmOptions{JVMArgs: []string{"-Xmx32m"},
		Args: []string{"--scenario", "--python-mb", "16", "--leak-after-s", leakAfter, "--python-leak-mb-s", "30", "--exit-after-s", "600"}})
	if j == nil || !tracked(c) {
		return
	}
	waitSample(c, "executor_process_resident_memory_bytes", map[string]string{"pid": strconv.Itoa(c.PID), "kind": "python"}, 1, time.Minute)
	c.ChildPID = testjvm.Descendant(c.PID, "python3")
	signals := recordSignals(c, 3*time.Minute)
	g.mu.Lock()
	c.Signals = signals
	g.mu.Unlock()
	waitFor(c, "the kernel kills a process in the container", 3*time.Minute, func() bool { return oomKills(c.CgroupDir) > 0 })
	c.CgroupOOMKills = oomKills(c.CgroupDir)
	waitSample(c, "executor_oom_kills_total", map[string]string{"task": "python3"}, 1, time.Minute)
	waitSample(c, "executor_container_oom_kills_total", pid(c), 1, time.Minute)
	waitSample(c, "executor_container_memory_events_total", map[string]string{"pid": strconv.Itoa(c.PID), "event": "oom_kill"}, 1, time.Minute)
	j.wait(0)
}

// kubernetesCase: an executor in a pod's container cgroup, limited at the
// container, as the kubelet makes it.
// A high above 0 is set as memory.high, as the kubelet's MemoryQoS does.
func (g *guest) kubernetesCase(name, id, cgroup string, high uint64) {
	c := g.newCase(name, "app-vm-k8s", id)
	j := g.start(name, c, cgroup, 320<<20, jvmOptions{JVMArgs: []string{"-Xmx64m"}, Args: []string{"--heap-mb", "8", "--exit-after-s", "600"}})
	if j == nil {
		return
	}
	if high > 0 {
		if err := os.WriteFile(filepath.Join(c.CgroupDir, "memory.high"), []byte(strconv.FormatUint(high, 10)), 0o644); err != nil {
			g.errorf("%s: memory.high: %v", name, err)
		}
		c.CgroupHigh = high
	}
	if !tracked(c) {
		return
	}
	waitSample(c, "executor_container_memory_limit_bytes", pid(c), 1, time.Minute)
	if high > 0 {
		waitSample(c, "executor_container_memory_high_bytes", pid(c), 1, time.Minute)
	}
	j.wait(0)
}

// startIdle starts an executor that holds a little heap until it is
// ended, in a container of its own, and waits until the exporter has
// read its heap.
func (g *guest) startIdle(name, id string) *jvm {
	c := g.newCase(name, "app-vm-exits", id)
	j := g.start(name, c, "vm-"+name, 256<<20, jvmOptions{JVMArgs: []string{"-Xmx64m"}, Args: []string{"--heap-mb", "8", "--exit-after-s", "600"}})
	if j == nil || !tracked(c) ||
		!waitSample(c, "executor_jvm_memory_used_bytes", map[string]string{"pid": strconv.Itoa(c.PID), "area": "heap"}, 1, time.Minute) {
		return nil
	}
	return j
}

// exitCase ends an idle executor with a signal: SIGKILL (as the kubelet
// or YARN) or SIGTERM (an orderly shutdown).
func (g *guest) exitCase(name, id string, sig syscall.Signal) {
	j := g.startIdle(name, id)
	if j == nil {
		return
	}
	j.signal(sig)
	ended(j.c, j, time.Minute)
}

// heapExhaustedCase: an executor fills its 64 MiB heap while collecting,
// and exits 52 from its OutOfMemoryError as Spark's does.
func (g *guest) heapExhaustedCase() {
	c := g.newCase("exit-heap", "app-vm-exits", "9")
	j := g.start("exit-heap", c, "vm-exit-heap", 512<<20, jvmOptions{JVMArgs: []string{"-Xmx64m"},
		Args: []string{"--spark-exit", "--heap-mb", "1000", "--step-mb", "1", "--step-ms", "250", "--churn", "--exit-after-s", "600"}})
	if j == nil || !tracked(c) {
		return
	}
	ended(c, j, 3*time.Minute)
}

// interruptedCase: the cloud announces a spot interruption, then the
// executor is SIGKILLed, as a node drain does.
func (g *guest) interruptedCase(j *jvm, imds *cloudtest.Server) {
	imds.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-01T00:00:00Z"}`)
	if !waitSample(j.c, "executor_instance_interruption_pending", map[string]string{"event": "spot_interruption"}, 1, time.Minute) {
		return
	}
	j.signal(syscall.SIGKILL)
	ended(j.c, j, time.Minute)
}

// nodeOOMCase: an executor without a container limit fills the machine;
// its oom_score_adj makes it the kernel's choice.
func (g *guest) nodeOOMCase() {
	c := g.newCase("node-oom", "app-vm-node", "11")
	j := g.start("node-oom", c, "vm-node-oom", 0, jvmOptions{Victim: true, JVMArgs: []string{"-Xmx64m", "-XX:MaxDirectMemorySize=8g"},
		Args: []string{"--scenario", "--leak-after-s", "10", "--direct-leak-mb-s", "200", "--exit-after-s", "600"}})
	if j == nil || !tracked(c) {
		return
	}
	ended(c, j, 3*time.Minute)
	waitSample(c, "executor_oom_kills_total", pid(c), 1, time.Minute)
}
