package jvm

import (
	"strings"
	"testing"
)

func TestNoCounters(t *testing.T) {
	cmdline := func(opts ...string) []byte {
		return []byte(strings.Join(append(append([]string{"/usr/bin/java"}, opts...),
			"org.apache.spark.executor.CoarseGrainedExecutorBackend", "--executor-id", "1", "-XX:-UsePerfData"), "\x00")) // the last is a program argument
	}
	for _, tc := range []struct {
		name string
		cmd  []byte
		env  Environment
		want string
	}{
		{"defaults", cmdline("-Xmx1g"), Environment{}, ""},
		{"PerfDisableSharedMem", cmdline("-XX:+PerfDisableSharedMem"), Environment{}, CountersSharedMemDisabled},
		{"UsePerfData off", cmdline("-XX:-UsePerfData"), Environment{}, CountersPerfDataOff},
		{"no perf data beats no shared memory", cmdline("-XX:+PerfDisableSharedMem", "-XX:-UsePerfData"), Environment{}, CountersPerfDataOff},
		{"the last one wins", cmdline("-XX:+PerfDisableSharedMem", "-XX:-PerfDisableSharedMem"), Environment{}, ""},
		{"a program argument is not an option", cmdline(), Environment{}, ""},
		{"JAVA_TOOL_OPTIONS", cmdline(), Environment{JavaToolOptions: "-Dx=1 -XX:+PerfDisableSharedMem"}, CountersSharedMemDisabled},
		{"the command line beats JAVA_TOOL_OPTIONS", cmdline("-XX:+UsePerfData"), Environment{JavaToolOptions: "-XX:-UsePerfData"}, ""},
		{"the command line beats JDK_JAVA_OPTIONS", cmdline("-XX:-PerfDisableSharedMem"), Environment{JDKJavaOptions: "-XX:+PerfDisableSharedMem"}, ""},
		{"JDK_JAVA_OPTIONS beats JAVA_TOOL_OPTIONS", cmdline(), Environment{JavaToolOptions: "-XX:-UsePerfData", JDKJavaOptions: "-XX:+UsePerfData"}, ""},
		{"_JAVA_OPTIONS beats the command line", cmdline("-XX:+UsePerfData"), Environment{JavaOptions: "-XX:-UsePerfData"}, CountersPerfDataOff},
		{"a lookalike option", cmdline("-XX:+PerfDisableSharedMemory", "-XX:UsePerfData"), Environment{}, ""},
	} {
		env := tc.env
		if got := NoCounters(ParseCmdline(tc.cmd), env); got != tc.want {
			t.Errorf("%s: NoCounters = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseEnvironJavaOptions(t *testing.T) {
	env := ParseEnviron([]byte("JAVA_TOOL_OPTIONS=-XX:+PerfDisableSharedMem\x00JDK_JAVA_OPTIONS=-Xss1m\x00_JAVA_OPTIONS=-XX:-UsePerfData\x00PATH=/bin"))
	if env.JavaToolOptions != "-XX:+PerfDisableSharedMem" || env.JDKJavaOptions != "-Xss1m" || env.JavaOptions != "-XX:-UsePerfData" {
		t.Errorf("ParseEnviron = %+v", env)
	}
}

// FuzzNoCounters: the verdict is one of the reasons, and follows from the
// last -XX:±UsePerfData / ±PerfDisableSharedMem among the options alone.
func FuzzNoCounters(f *testing.F) {
	f.Add("-XX:+PerfDisableSharedMem", "-XX:-UsePerfData -XX:+UsePerfData", "")
	f.Add("-XX:-UsePerfData", "", "-XX:+PerfDisableSharedMem")
	f.Add("-XX:", "-XX:+", "-XX:-PerfDisableSharedMem\t-XX:-UsePerfData")
	f.Fuzz(func(t *testing.T, cmdOpts, toolOpts, lastOpts string) {
		args := append([]string{"java"}, strings.Fields(cmdOpts)...)
		c := ParseCmdline([]byte(strings.Join(append(args, "Main"), "\x00")))
		got := NoCounters(c, Environment{JavaToolOptions: toolOpts, JavaOptions: lastOpts})
		all := strings.Fields(toolOpts + " " + strings.Join(args[1:], " ") + " " + lastOpts)
		if c.MainClass != "Main" {
			// An option that takes an argument swallowed "Main": the options
			// seen are not all of args.
			return
		}
		usePerf, disableShm := "+", "-"
		for _, a := range all {
			switch a {
			case "-XX:+UsePerfData", "-XX:-UsePerfData":
				usePerf = a[4:5]
			case "-XX:+PerfDisableSharedMem", "-XX:-PerfDisableSharedMem":
				disableShm = a[4:5]
			}
		}
		want := ""
		if usePerf == "-" {
			want = CountersPerfDataOff
		} else if disableShm == "+" {
			want = CountersSharedMemDisabled
		}
		if got != want {
			t.Fatalf("options %q: NoCounters = %q, want %q", all, got, want)
		}
	})
}
