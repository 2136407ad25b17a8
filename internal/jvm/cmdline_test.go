package jvm

import (
	"strings"
	"testing"
)

func nul(args ...string) []byte { return []byte(strings.Join(args, "\x00") + "\x00") }

func TestParseCmdline(t *testing.T) {
	longCP := strings.Repeat("/opt/spark/jars/some-library-1.2.3.jar:", 200) // past sun.rt.javaCommand's 1024 bytes
	tests := []struct {
		name string
		in   []byte
		want Command
	}{
		{"empty", nil, Command{Role: RoleJVM}},
		{"only NULs", []byte("\x00\x00"), Command{Role: RoleJVM}},
		{
			"standalone executor",
			nul("/usr/bin/java", "-cp", longCP, "-Xmx4g", "-Dspark.driver.port=40000",
				"org.apache.spark.executor.CoarseGrainedExecutorBackend",
				"--driver-url", "spark://CoarseGrainedScheduler@10.0.0.1:40000",
				"--executor-id", "7", "--hostname", "10.0.0.2", "--cores", "4",
				"--app-id", "app-20261122-0001", "--worker-url", "spark://Worker@10.0.0.2:1234"),
			Command{MainClass: "org.apache.spark.executor.CoarseGrainedExecutorBackend", Role: RoleExecutor,
				AppID: "app-20261122-0001", ExecutorID: "7", Xmx: "4g"},
		},
		{
			"yarn executor, ids with =",
			nul("java", "-server", "-Xmx1g", "-Xmx2048m", "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend",
				"--executor-id=12", "--app-id=application_1700000000000_0042"),
			Command{MainClass: "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend", Role: RoleExecutor,
				AppID: "application_1700000000000_0042", ExecutorID: "12", Xmx: "2048m"},
		},
		{
			"yarn executor as the NodeManager launches it",
			nul("/usr/lib/jvm/java/bin/java", "-server", "-Xmx4505m", "-Djava.io.tmpdir=/mnt/yarn/usercache/hadoop/appcache/application_1700000000000_0042/container_e02_1700000000000_0042_01_000003/tmp",
				"-Dspark.yarn.app.container.log.dir=/var/log/hadoop-yarn/containers/application_1700000000000_0042/container_e02_1700000000000_0042_01_000003",
				"org.apache.spark.executor.YarnCoarseGrainedExecutorBackend", "--executor-id", "2", "--app-id", "application_1700000000000_0042"),
			Command{MainClass: "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend", Role: RoleExecutor,
				AppID: "application_1700000000000_0042", ExecutorID: "2", Xmx: "4505m", YARNContainer: "container_e02_1700000000000_0042_01_000003"},
		},
		{
			"a log directory that names no container",
			nul("java", "-Dspark.yarn.app.container.log.dir=/var/log/x/notacontainer", "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"),
			Command{MainClass: "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend", Role: RoleExecutor},
		},
		{
			"kubernetes executor without ids",
			nul("/opt/java/openjdk/bin/java", "-Xms2g", "-Xmx2g", "-cp", "/opt/spark/conf::/opt/spark/jars/*",
				"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend", "--driver-url", "x", "--cores", "1"),
			Command{MainClass: "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend", Role: RoleExecutor, Xmx: "2g"},
		},
		{
			"driver with spark.app.id",
			nul("java", "-cp", "/x", "-Xmx1g", "org.apache.spark.deploy.SparkSubmit", "--master", "local",
				"--conf", "spark.app.id=app-1", "--class", "Foo", "foo.jar"),
			Command{MainClass: "org.apache.spark.deploy.SparkSubmit", Role: RoleDriver, AppID: "app-1", Xmx: "1g"},
		},
		{
			"driver with -D app id",
			nul("java", "-Dspark.app.id=app-2", "org.apache.spark.deploy.SparkSubmit"),
			Command{MainClass: "org.apache.spark.deploy.SparkSubmit", Role: RoleDriver, AppID: "app-2"},
		},
		{
			"driver without app id",
			nul("java", "org.apache.spark.deploy.SparkSubmit", "--conf=spark.executor.memory=4g"),
			Command{MainClass: "org.apache.spark.deploy.SparkSubmit", Role: RoleDriver},
		},
		{
			"jar",
			nul("java", "-Xmx512m", "-jar", "/opt/kafka/kafka.jar", "--executor-id", "3"),
			Command{MainClass: "/opt/kafka/kafka.jar", Role: RoleJVM, Xmx: "512m"},
		},
		{
			"module",
			nul("java", "--module-path", "/mods", "-m", "com.example/com.example.Main", "-Xmx9g"),
			Command{MainClass: "com.example.Main", Role: RoleJVM},
		},
		{
			"module with =",
			nul("java", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--module=com.example"),
			Command{MainClass: "com.example", Role: RoleJVM},
		},
		{
			"executor id looks like an option value only after the class",
			nul("java", "-Dx=--executor-id", "org.apache.spark.executor.CoarseGrainedExecutorBackend", "--executor-id"),
			Command{MainClass: "org.apache.spark.executor.CoarseGrainedExecutorBackend", Role: RoleExecutor},
		},
		{
			"no main class",
			nul("java", "-version"),
			Command{Role: RoleJVM},
		},
		{
			"not NUL-terminated",
			[]byte("java\x00-Xmx3g\x00standin.Idle"),
			Command{MainClass: "standin.Idle", Role: RoleJVM, Xmx: "3g"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseCmdline(tt.in); got != tt.want {
				t.Errorf("ParseCmdline:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseEnvironAndMerge(t *testing.T) {
	env := ParseEnviron(nul("PATH=/bin", "SPARK_EXECUTOR_ID=42", "SPARK_APPLICATION_ID=spark-abc",
		"SPARK_EXECUTOR_POD_NAME=job-exec-42", "BROKEN", "SPARK_EXECUTOR_IDX=9", "EMPTY="))
	want := Environment{ExecutorID: "42", AppID: "spark-abc", PodName: "job-exec-42"}
	if env != want {
		t.Fatalf("ParseEnviron = %+v, want %+v", env, want)
	}

	exec := Command{MainClass: "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend", Role: RoleExecutor}
	if got := exec.Merge(env); got.ExecutorID != "42" || got.AppID != "spark-abc" {
		t.Errorf("executor without ids: Merge = %+v", got)
	}
	exec.ExecutorID, exec.AppID = "7", "app-1"
	if got := exec.Merge(env); got.ExecutorID != "7" || got.AppID != "app-1" {
		t.Errorf("the command line must win over the environment: Merge = %+v", got)
	}
	plain := Command{MainClass: "standin.Idle", Role: RoleJVM}
	if got := plain.Merge(env); got != plain {
		t.Errorf("a non-executor must not take Spark ids: Merge = %+v", got)
	}
	if got := ParseEnviron(nil); got != (Environment{}) {
		t.Errorf("ParseEnviron(nil) = %+v", got)
	}
	// The NodeManager's CONTAINER_ID names the container of any JVM in
	// it; the command line's log directory wins; a malformed id is none.
	yarn := ParseEnviron(nul("CONTAINER_ID=container_1700000000000_0042_01_000002", "HOME=/home/yarn"))
	if got := plain.Merge(yarn); got.YARNContainer != "container_1700000000000_0042_01_000002" || got.Role != RoleJVM {
		t.Errorf("Merge of CONTAINER_ID = %+v", got)
	}
	fromLog := Command{Role: RoleExecutor, YARNContainer: "container_1700000000000_0042_01_000009"}
	if got := fromLog.Merge(yarn); got.YARNContainer != fromLog.YARNContainer {
		t.Errorf("the command line's container must win: Merge = %+v", got)
	}
	if got := ParseEnviron(nul("CONTAINER_ID=container_x")); got.YARNContainer != "" {
		t.Errorf("a malformed CONTAINER_ID taken: %+v", got)
	}
}
