package statuspage

import (
	"fmt"
	"time"
)

const mib = 1 << 20

var fixtureTime = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// fixture is a node with what the page must tell apart: a driver, an
// executor that fits its container, one whose heap max cannot fit, a
// PySpark executor near its limit, a JVM with no limit, a pending spot
// interruption, a heap kill of a tracked executor, a PySpark worker
// killed in its executor's container and a kill of an untracked process.
func fixture() Snapshot {
	sampled := fixtureTime.Add(-2 * time.Second)
	executor := func(pid int, id string, heapMax, nonHeap, python, limit uint64) JVM {
		return JVM{
			Identity:  Identity{PID: pid, Role: "executor", AppID: "spark-4f2a", ExecutorID: id, Namespace: "etl", Pod: "etl-exec-" + id},
			MainClass: "org.apache.spark.executor.CoarseGrainedExecutorBackend",
			Memory: Memory{
				HeapUsed: heapMax / 2, HeapCommitted: heapMax * 3 / 4, HeapMax: heapMax,
				NonHeapUsed: nonHeap * 9 / 10, NonHeapCommitted: nonHeap,
				RSSJVM: heapMax*3/4 + nonHeap, RSSPython: python,
				ContainerLimit: limit, ContainerUsage: heapMax*3/4 + nonHeap + python,
			},
			// An executor keeps about a third of its heap max alive and
			// peaked a little above where it is now.
			Peaks: Peaks{HeapLive: heapMax / 3, NonHeap: nonHeap * 11 / 10, Python: python,
				Container: heapMax*3/4 + nonHeap*11/10 + python, Resident: heapMax*3/4 + nonHeap*11/10},
		}
	}
	// cgroup v2 with PSI: one container idle, the PySpark one reclaiming.
	withPressure := func(j JVM, some, full float64) JVM {
		j.ContainerPressure = &Pressure{SomeAvg10: some, FullAvg10: full}
		return j
	}
	return Snapshot{
		Version:     "1.2.0 (branch: main, revision: abc)",
		Time:        fixtureTime,
		MetricsPath: "/metrics",
		Machine: &Machine{
			Provider: "aws", Platform: "linux", InstanceType: "r6i.2xlarge", Lifecycle: "spot",
			Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-0abc", Node: "ip-10-0-1-7", NodePool: "spark-spot",
			Source: "imds,kubernetes", LastRefresh: fixtureTime.Add(-10 * time.Minute),
			Notices: []Notice{
				{Event: "spot-interruption", Pending: true, Time: fixtureTime.Add(2 * time.Minute)},
				{Event: "rebalance-recommendation"},
			},
		},
		JVMsSampled: sampled,
		JVMs: []JVM{
			withPressure(executor(4242, "10", 4096*mib, 300*mib, 0, 5120*mib), 0, 0),
			executor(4100, "2", 1024*mib, 120*mib, 0, 1024*mib),
			withPressure(executor(4300, "3", 2048*mib, 200*mib, 600*mib, 3000*mib), 14.25, 3.1),
			{
				Identity:  Identity{PID: 3900, Role: "driver", AppID: "spark-4f2a"},
				MainClass: "org.apache.spark.deploy.SparkSubmit",
				Memory:    Memory{HeapUsed: 300 * mib, HeapCommitted: 512 * mib, HeapMax: 1024 * mib, NonHeapUsed: 90 * mib, NonHeapCommitted: 100 * mib, RSSJVM: 640 * mib},
			},
			{Identity: Identity{PID: 1200, Role: "jvm"}, MainClass: "com.example.Sidecar"},
			{
				Identity: Identity{PID: 4500, Role: "executor", AppID: "spark-4f2a", ExecutorID: "4"}, Counters: "perf_disable_shared_mem",
				MainClass: "org.apache.spark.executor.CoarseGrainedExecutorBackend",
				Memory:    Memory{RSSJVM: 700 * mib, RSSPython: 100 * mib, ContainerLimit: 1024 * mib, ContainerUsage: 820 * mib},
			},
		},
		ExitsCounted: true,
		Exits: []Exit{{
			Time:     fixtureTime.Add(-3 * time.Minute),
			Identity: Identity{PID: 4001, Role: "executor", AppID: "spark-4f2a", ExecutorID: "1", Namespace: "etl", Pod: "etl-exec-1"},
			Reason:   "oom_killed", Detail: "kernel OOM kill (cause heap) read 300ms after the JVM was last seen alive",
		}},
		KillsFollowed: true,
		Kills: []Kill{
			{
				Time: fixtureTime.Add(-3 * time.Minute), PID: 4001, Task: "java", Constraint: "CONSTRAINT_MEMCG",
				Cause:         "heap",
				Reason:        "committed heap 1000 MiB against container usage 1020 MiB (98%) and the heap's max does not fit in the container beside non-heap memory",
				Advice:        "lower -Xmx (spark.executor.memory) or raise the limit",
				KilledAnonRSS: 1010 * mib,
				Namespace:     "etl", Pod: "etl-exec-1",
				Victim: &Identity{PID: 4001, Role: "executor", AppID: "spark-4f2a", ExecutorID: "1", Namespace: "etl", Pod: "etl-exec-1"},
				LastSample: &Sample{Time: fixtureTime.Add(-3*time.Minute - 1500*time.Millisecond), Memory: Memory{
					HeapUsed: 900 * mib, HeapCommitted: 1000 * mib, HeapMax: 1024 * mib, NonHeapCommitted: 110 * mib,
					RSSJVM: 1015 * mib, ContainerLimit: 1024 * mib, ContainerUsage: 1020 * mib,
				}},
			},
			{
				Time: fixtureTime.Add(-20 * time.Minute), PID: 4003, Task: "java", Constraint: "CONSTRAINT_MEMCG",
				Cause:     "native",
				Region:    "malloc",
				Reason:    "committed heap 1200 MiB against container usage 2040 MiB (59%) but its max fits in the container: non-heap memory pushed it over the limit; malloc grew 610 MiB since 09:02:11",
				Advice:    "glibc arenas: set spark.executorEnv.MALLOC_ARENA_MAX=2 (or use jemalloc), or raise spark.executor.memoryOverhead",
				Namespace: "etl", Pod: "etl-exec-3", KilledAnonRSS: 2000 * mib,
				Victim: &Identity{PID: 4003, Role: "executor", AppID: "spark-4f2a", ExecutorID: "3", Namespace: "etl", Pod: "etl-exec-3"},
			},
			{
				Time: fixtureTime.Add(-30 * time.Minute), PID: 4388, Task: "python3", Constraint: "CONSTRAINT_MEMCG",
				Cause: "native", Region: "python",
				Reason:    "the executor's child python3 (pid 4388), not the JVM, was killed holding 2410 MiB at container usage 2990 MiB; the JVM lives on",
				Advice:    "set spark.executor.pyspark.memory to 2.9 GiB at least (or raise spark.executor.memoryOverhead by as much), or use less memory in Python UDFs",
				Namespace: "etl", Pod: "etl-exec-3", KilledAnonRSS: 2410 * mib,
				Victim: &Identity{PID: 4300, Role: "executor", AppID: "spark-4f2a", ExecutorID: "3", Namespace: "etl", Pod: "etl-exec-3"},
			},
			{
				Time: fixtureTime.Add(-50 * time.Minute), PID: 777, Task: "python3", Constraint: "CONSTRAINT_NONE",
				Cause: "node", Reason: "the machine ran out of memory (CONSTRAINT_NONE), not a container limit",
				Namespace: "etl", Pod: "etl-driver",
				KilledAnonRSS: 2 * 1024 * mib,
			},
		},
	}
}

// manyJVMs is a node with n executors and a few kills, for the benchmark.
func manyJVMs(n int) Snapshot {
	s := fixture()
	s.JVMs = s.JVMs[:0]
	for i := 0; i < n; i++ {
		heap := uint64(1024+i*16) * mib
		s.JVMs = append(s.JVMs, JVM{
			Identity: Identity{PID: 10000 + i, Role: "executor", AppID: fmt.Sprintf("spark-app-%d", i%7),
				ExecutorID: fmt.Sprint(i), Namespace: "etl", Pod: fmt.Sprintf("etl-exec-%d", i)},
			MainClass: "org.apache.spark.executor.CoarseGrainedExecutorBackend",
			Memory: Memory{HeapUsed: heap / 2, HeapCommitted: heap * 3 / 4, HeapMax: heap, NonHeapUsed: 90 * mib,
				NonHeapCommitted: 100 * mib, RSSJVM: heap, RSSPython: uint64(i%3) * 100 * mib, ContainerLimit: 2048 * mib, ContainerUsage: heap},
		})
	}
	for len(s.Kills) < 20 {
		s.Kills = append(s.Kills, s.Kills[0])
	}
	return s
}
