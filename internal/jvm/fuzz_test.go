package jvm

import (
	"bytes"
	"strings"
	"testing"
)

// Seeds shared by the targets: real /proc/<pid>/cmdline and environ of
// Spark JVMs (NUL-separated, NUL-terminated).
var (
	seedCmdlines = [][]byte{
		nul("/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "-cp",
			"/opt/spark/conf/:/opt/spark/jars/*", "-Xmx4096M", "-Dspark.driver.port=40217",
			"-XX:+IgnoreUnrecognizedVMOptions", "--add-opens=java.base/java.lang=ALL-UNNAMED",
			"org.apache.spark.executor.CoarseGrainedExecutorBackend",
			"--driver-url", "spark://CoarseGrainedScheduler@10.0.0.1:40217",
			"--executor-id", "3", "--hostname", "10.0.0.7", "--cores", "4",
			"--app-id", "app-20240501101500-0007", "--worker-url", "spark://Worker@10.0.0.7:35555",
			"--resourceProfileId", "0"),
		nul("/usr/lib/jvm/java-8-openjdk/bin/java", "-server", "-Xmx2048m", "-Djava.io.tmpdir=/tmp",
			"-Dspark.yarn.app.container.log.dir=/var/log/hadoop-yarn/containers/application_1714550000000_0042/container_1714550000000_0042_01_000002",
			"org.apache.spark.executor.YarnCoarseGrainedExecutorBackend",
			"--driver-url", "spark://CoarseGrainedScheduler@ip-10-0-0-1.ec2.internal:36789",
			"--executor-id", "1", "--hostname", "ip-10-0-0-9.ec2.internal", "--cores", "2",
			"--app-id", "application_1714550000000_0042", "--resourceProfileId", "0"),
		nul("/opt/java/openjdk/bin/java", "-Dspark.driver.port=7078", "-Xms1g", "-Xmx1g",
			"-cp", "/opt/spark/conf::/opt/spark/jars/*:",
			"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
			"--driver-url", "spark://CoarseGrainedScheduler@spark-pi-driver-svc.default.svc:7078",
			"--executor-id", "2", "--cores", "1", "--app-id", "spark-5b3c1f0e9d4a4b6f",
			"--hostname", "10.244.1.12", "--resourceProfileId", "0", "--podName", "spark-pi-exec-2"),
		nul("/usr/bin/java", "-cp", "/opt/spark/conf/:/opt/spark/jars/*", "-Xmx1g",
			"org.apache.spark.deploy.SparkSubmit", "--master", "k8s://https://10.96.0.1:443",
			"--conf", "spark.app.id=spark-5b3c1f0e9d4a4b6f", "--conf=spark.executor.memory=2g",
			"--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar"),
		nul("java", "-Xmx512m", "-jar", "/opt/kafka/kafka.jar"),
		nul("java", "--module-path", "/mods", "-m", "com.example/com.example.Main", "--executor-id", "9"),
		nul("java", "--module=org.apache.spark.executor.CoarseGrainedExecutorBackend", "--executor-id=4"),
		nul("java", "@argfile", "-d", "x", "org.apache.spark.executor.CoarseGrainedExecutorBackend", "--executor-id"),
		nul("java", "-Xmx", "-Xmx"),                                      // -Xmx with no size
		nul("", "-p", "00", "org.apache.spark.deploy.SparkSubmit", "00"), // -p takes the next argument
		nul("", "org.apache.spark.executor.CoarseGrainedExecutorBackend", "--executor-id", ""),
		nil,
		[]byte("\x00\x00"),
	}
	seedEnvirons = [][]byte{
		nul("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"HOSTNAME=spark-pi-exec-2", "JAVA_HOME=/opt/java/openjdk", "SPARK_USER=spark",
			"SPARK_DRIVER_URL=spark://CoarseGrainedScheduler@spark-pi-driver-svc.default.svc:7078",
			"SPARK_EXECUTOR_CORES=1", "SPARK_EXECUTOR_MEMORY=1g",
			"SPARK_APPLICATION_ID=spark-5b3c1f0e9d4a4b6f", "SPARK_CONF_DIR=/opt/spark/conf",
			"SPARK_EXECUTOR_ID=2", "SPARK_RESOURCE_PROFILE_ID=0",
			"SPARK_EXECUTOR_POD_NAME=spark-pi-exec-2", "SPARK_EXECUTOR_POD_IP=10.244.1.12",
			"SPARK_JAVA_OPT_0=-Dspark.driver.port=7078", "HOME=/opt/spark/work-dir"),
		nul("SPARK_EXECUTOR_ID=1", "SPARK_EXECUTOR_ID=", "SPARK_APPLICATION_ID=a=b", "SPARK_EXECUTOR_POD_NAME"),
		nul("HOME=/root", "TERM=xterm"),
		nul("SPARK_APPLICATION_ID=", "SPARK_APPLICATION_ID=", "SPARK_EXECUTOR_POD_NAME=x", "SPARK_EXECUTOR_POD_NAME="),
		nul("=", "", "=x", "SPARK_EXECUTOR_ID"),
		nil,
	}
)

// isArg reports whether s is one NUL-separated argument of b.
func isArg(b []byte, s string) bool {
	for _, a := range bytes.Split(b, []byte{0}) {
		if string(a) == s {
			return true
		}
	}
	return false
}

// isArgOrSuffix reports whether s is an argument of b or what follows a
// "/" or an "=" in one (module/class, --module=..., --name=value).
func isArgOrSuffix(b []byte, s string) bool {
	for _, a := range bytes.Split(b, []byte{0}) {
		if string(a) == s ||
			bytes.HasSuffix(a, []byte("/"+s)) || bytes.HasSuffix(a, []byte("="+s)) {
			return true
		}
	}
	return false
}

// FuzzParseCmdline: whatever the command line, the role is one of the
// three and agrees with the main class; ids only come with the roles that
// have them; every field is taken from one argument (no NUL in it); and
// trailing NULs change nothing.
func FuzzParseCmdline(f *testing.F) {
	for _, s := range seedCmdlines {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := ParseCmdline(b)
		switch c.Role {
		case RoleExecutor:
			if !executorClasses[c.MainClass] {
				t.Fatalf("executor with main class %q", c.MainClass)
			}
		case RoleDriver:
			if c.MainClass != driverClass {
				t.Fatalf("driver with main class %q", c.MainClass)
			}
			if c.ExecutorID != "" {
				t.Fatalf("driver with executor id %q", c.ExecutorID)
			}
		case RoleJVM:
			if executorClasses[c.MainClass] || c.MainClass == driverClass {
				t.Fatalf("plain jvm with main class %q", c.MainClass)
			}
			if c.AppID != "" || c.ExecutorID != "" {
				t.Fatalf("plain jvm with ids %q/%q", c.AppID, c.ExecutorID)
			}
		default:
			t.Fatalf("role %q", c.Role)
		}
		for _, s := range []string{c.MainClass, c.AppID, c.ExecutorID, c.Xmx} {
			if strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("field %q holds a NUL", s)
			}
		}
		for _, s := range []string{c.MainClass, c.AppID, c.ExecutorID} {
			if s != "" && !isArgOrSuffix(b, s) {
				t.Fatalf("field %q is not taken from an argument of %q", s, b)
			}
		}
		if c.Xmx != "" && !isArg(b, "-Xmx"+c.Xmx) {
			t.Fatalf("Xmx %q without an -Xmx argument", c.Xmx)
		}
		if again := ParseCmdline(append(bytes.Clone(b), 0, 0)); again != c {
			t.Fatalf("trailing NULs changed %+v into %+v", c, again)
		}
	})
}

// FuzzParseEnviron: each field is the value of the last KEY=value entry of
// its variable, or empty when there is none.
func FuzzParseEnviron(f *testing.F) {
	for _, s := range seedEnvirons {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		env := ParseEnviron(b)
		last := func(key string) string {
			entries := bytes.Split(b, []byte{0})
			for i := len(entries) - 1; i >= 0; i-- {
				if v, ok := bytes.CutPrefix(entries[i], []byte(key+"=")); ok {
					return string(v)
				}
			}
			return ""
		}
		for _, tc := range []struct{ key, got string }{
			{"SPARK_EXECUTOR_ID", env.ExecutorID},
			{"SPARK_APPLICATION_ID", env.AppID},
			{"SPARK_EXECUTOR_POD_NAME", env.PodName},
		} {
			if want := last(tc.key); tc.got != want {
				t.Fatalf("%s = %q, want %q", tc.key, tc.got, want)
			}
		}
	})
}

// FuzzMerge: merging only fills the empty ids of an executor, from the
// environment; it changes nothing else and a second merge is a no-op.
func FuzzMerge(f *testing.F) {
	for _, c := range seedCmdlines {
		for _, e := range seedEnvirons {
			f.Add(c, e)
		}
	}
	f.Fuzz(func(t *testing.T, cmdline, environ []byte) {
		c, env := ParseCmdline(cmdline), ParseEnviron(environ)
		m := c.Merge(env)
		if m.Role != c.Role || m.MainClass != c.MainClass || m.Xmx != c.Xmx {
			t.Fatalf("Merge changed %+v into %+v", c, m)
		}
		if c.Role != RoleExecutor {
			if m != c {
				t.Fatalf("Merge changed a %s: %+v into %+v", c.Role, c, m)
			}
			return
		}
		for _, tc := range []struct{ name, cmd, envValue, got string }{
			{"executor id", c.ExecutorID, env.ExecutorID, m.ExecutorID},
			{"app id", c.AppID, env.AppID, m.AppID},
		} {
			want := tc.cmd
			if want == "" {
				want = tc.envValue
			}
			if tc.got != want {
				t.Fatalf("%s: command line %q, environment %q, merged %q", tc.name, tc.cmd, tc.envValue, tc.got)
			}
		}
		if again := m.Merge(env); again != m {
			t.Fatalf("second Merge changed %+v into %+v", m, again)
		}
	})
}
