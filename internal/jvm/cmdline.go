package jvm

import (
	"bytes"
	"path"
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/cgroupid"
)

// Roles a JVM can have.
const (
	RoleExecutor = "executor"
	RoleDriver   = "driver"
	RoleJVM      = "jvm"
)

// executorClasses are the main classes Spark starts executors with, on
// standalone / YARN / Kubernetes.
var executorClasses = map[string]bool{
	"org.apache.spark.executor.CoarseGrainedExecutorBackend":           true,
	"org.apache.spark.executor.YarnCoarseGrainedExecutorBackend":       true,
	"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend": true,
}

const driverClass = "org.apache.spark.deploy.SparkSubmit"

// Command is what a JVM's command line says about it.
type Command struct {
	MainClass  string // class, module/class's class, or the jar given to -jar
	Role       string
	AppID      string
	ExecutorID string
	Xmx        string // the last -Xmx as written ("4g"); empty when not given
	// YARNContainer is the YARN container the JVM runs in
	// (container_…), from the directory Spark names in
	// -Dspark.yarn.app.container.log.dir, else from CONTAINER_ID in the
	// environment (Merge); empty outside YARN.
	YARNContainer string
	// Perf is what the command line's options say about hsperfdata.
	Perf PerfOptions
}

// PerfOptions are the HotSpot options that decide whether a JVM publishes
// its counters in an hsperfdata file: '+' or '-' as last given, 0 when not
// given (HotSpot's defaults: +UsePerfData, -PerfDisableSharedMem).
type PerfOptions struct {
	UsePerfData          byte
	PerfDisableSharedMem byte
}

// Why a JVM has no hsperfdata file, the values of executor_jvm_info's
// counters label (CountersHsperf when it has one).
const (
	CountersHsperf            = "hsperfdata"
	CountersPerfDataOff       = "use_perf_data_off"       // -XX:-UsePerfData: no counters at all
	CountersSharedMemDisabled = "perf_disable_shared_mem" // -XX:+PerfDisableSharedMem: counters in private memory
	CountersNoFile            = "no_file"                 // the options allow a file, yet there is none
)

// parse takes one option into o; it reports whether it was one of them.
func (o *PerfOptions) parse(a string) bool {
	rest, ok := strings.CutPrefix(a, "-XX:")
	if !ok || len(rest) < 2 || (rest[0] != '+' && rest[0] != '-') {
		return false
	}
	switch rest[1:] {
	case "UsePerfData":
		o.UsePerfData = rest[0]
	case "PerfDisableSharedMem":
		o.PerfDisableSharedMem = rest[0]
	default:
		return false
	}
	return true
}

// overlay applies later options over earlier ones.
func (o PerfOptions) overlay(later PerfOptions) PerfOptions {
	if later.UsePerfData != 0 {
		o.UsePerfData = later.UsePerfData
	}
	if later.PerfDisableSharedMem != 0 {
		o.PerfDisableSharedMem = later.PerfDisableSharedMem
	}
	return o
}

func perfOptionsOf(options string) PerfOptions {
	var o PerfOptions
	for _, a := range strings.Fields(options) {
		o.parse(a)
	}
	return o
}

// NoCounters says why a JVM started this way publishes no hsperfdata file,
// or "" when its options let it. HotSpot reads options in this order, the
// last one winning: JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS (the java launcher
// puts it before the command line's), the command line, _JAVA_OPTIONS.
// Options in -XX:Flags or -XX:VMOptionsFile files are not seen.
func NoCounters(c Command, env Environment) string {
	o := perfOptionsOf(env.JavaToolOptions).
		overlay(perfOptionsOf(env.JDKJavaOptions)).
		overlay(c.Perf).
		overlay(perfOptionsOf(env.JavaOptions))
	switch {
	case o.UsePerfData == '-':
		return CountersPerfDataOff
	case o.PerfDisableSharedMem == '+':
		return CountersSharedMemDisabled
	default:
		return ""
	}
}

// launcherOptionsWithArg are java launcher options whose value is the next
// argument; without knowing them the value would be taken for the main class.
var launcherOptionsWithArg = map[string]bool{
	"-cp": true, "-classpath": true, "--class-path": true,
	"-p": true, "--module-path": true, "--upgrade-module-path": true,
	"--add-modules": true, "--enable-native-access": true, "--limit-modules": true,
	"--add-exports": true, "--add-opens": true, "--add-reads": true,
	"--patch-module": true, "--describe-module": true, "-d": true,
}

// yarnLogDir is the option YARN's executor launch command gives every
// executor: its container's log directory, named after the container.
const yarnLogDir = "-Dspark.yarn.app.container.log.dir="

// ParseCmdline reads /proc/<pid>/cmdline (NUL-separated) of a java process.
// Unlike sun.rt.javaCommand it is not cut at 1024 bytes, so Spark's
// arguments after a long classpath are still there.
func ParseCmdline(b []byte) Command {
	args := splitNUL(b)
	cmd := Command{Role: RoleJVM}
	if len(args) == 0 {
		return cmd
	}
	i := 1 // args[0] is the launcher
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "-Xmx"):
			cmd.Xmx = a[len("-Xmx"):]
			continue
		case strings.HasPrefix(a, yarnLogDir):
			if dir := path.Base(a[len(yarnLogDir):]); cgroupid.IsYARNContainer(dir) {
				cmd.YARNContainer = dir
			}
			continue
		case a == "-jar":
			if i+1 < len(args) {
				cmd.MainClass = args[i+1]
			}
			i += 2
		case a == "-m" || a == "--module":
			if i+1 < len(args) {
				cmd.MainClass = moduleClass(args[i+1])
			}
			i += 2
		case strings.HasPrefix(a, "--module="):
			cmd.MainClass = moduleClass(a[len("--module="):])
			i++
		case cmd.Perf.parse(a):
			continue
		case launcherOptionsWithArg[a]:
			i++
			continue
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "@"):
			continue
		default:
			cmd.MainClass = a
			i++
		}
		break
	}
	if i > len(args) {
		i = len(args)
	}
	programArgs := args[i:]

	switch {
	case executorClasses[cmd.MainClass]:
		cmd.Role = RoleExecutor
		cmd.ExecutorID = flagValue(programArgs, "--executor-id")
		cmd.AppID = flagValue(programArgs, "--app-id")
	case cmd.MainClass == driverClass:
		cmd.Role = RoleDriver
		cmd.AppID = confValue(args, "spark.app.id")
	}
	return cmd
}

func splitNUL(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte{0})
	args := make([]string, len(parts))
	for i, p := range parts {
		args[i] = string(p)
	}
	return args
}

// moduleClass returns the class of a "module/class" main; a module alone
// names no class, so the module is returned.
func moduleClass(s string) string {
	if _, class, ok := strings.Cut(s, "/"); ok {
		return class
	}
	return s
}

// flagValue returns the value of "--name v" or "--name=v"; the last one wins.
func flagValue(args []string, name string) string {
	var v string
	for i, a := range args {
		if a == name && i+1 < len(args) {
			v = args[i+1]
		} else if rest, ok := strings.CutPrefix(a, name+"="); ok {
			v = rest
		}
	}
	return v
}

// confValue returns a Spark property given as -Dkey=v, "--conf key=v" or
// "--conf=key=v"; the last one wins.
func confValue(args []string, key string) string {
	var v string
	for i, a := range args {
		a = strings.TrimPrefix(a, "-D")
		a = strings.TrimPrefix(a, "--conf=")
		if a == "--conf" && i+1 < len(args) {
			a = args[i+1]
		}
		if rest, ok := strings.CutPrefix(a, key+"="); ok {
			v = rest
		}
	}
	return v
}

// Environment is what Spark on Kubernetes puts in an executor's environment.
type Environment struct {
	ExecutorID string // SPARK_EXECUTOR_ID
	AppID      string // SPARK_APPLICATION_ID
	PodName    string // SPARK_EXECUTOR_POD_NAME
	// YARNContainer is CONTAINER_ID, which the NodeManager sets in every
	// container's environment.
	YARNContainer string

	// Options every JVM (JAVA_TOOL_OPTIONS, _JAVA_OPTIONS) or the java
	// launcher (JDK_JAVA_OPTIONS) adds to its command line.
	JavaToolOptions, JDKJavaOptions, JavaOptions string
}

// ParseEnviron reads /proc/<pid>/environ (NUL-separated KEY=value).
func ParseEnviron(b []byte) Environment {
	var env Environment
	for _, kv := range bytes.Split(b, []byte{0}) {
		key, value, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			continue
		}
		switch string(key) {
		case "SPARK_EXECUTOR_ID":
			env.ExecutorID = string(value)
		case "SPARK_APPLICATION_ID":
			env.AppID = string(value)
		case "SPARK_EXECUTOR_POD_NAME":
			env.PodName = string(value)
		case "CONTAINER_ID":
			if cgroupid.IsYARNContainer(string(value)) {
				env.YARNContainer = string(value)
			}
		case "JAVA_TOOL_OPTIONS":
			env.JavaToolOptions = string(value)
		case "JDK_JAVA_OPTIONS":
			env.JDKJavaOptions = string(value)
		case "_JAVA_OPTIONS":
			env.JavaOptions = string(value)
		}
	}
	return env
}

// Merge fills the Spark ids the command line left empty from the
// environment: on Kubernetes the executor id can be resolved at runtime;
// and the YARN container of any JVM.
func (c Command) Merge(env Environment) Command {
	if c.YARNContainer == "" {
		c.YARNContainer = env.YARNContainer
	}
	if c.Role != RoleExecutor {
		return c
	}
	if c.ExecutorID == "" {
		c.ExecutorID = env.ExecutorID
	}
	if c.AppID == "" {
		c.AppID = env.AppID
	}
	return c
}
