package hsperf

import "testing"

// The JVM's file is 32 KiB, zeros after "used": benchmark on that, as the
// exporter reads it.
func benchFile(b *testing.B) []byte { return benchFixture(b, "g1") }

// benchFixture is a collector's fixture zero-padded to 32 KiB.
func benchFixture(b *testing.B, name string) []byte {
	f := readFixture(b, name)
	return append(f, make([]byte, 32<<10-len(f))...)
}

func BenchmarkParse(b *testing.B) {
	file := benchFile(b)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(file); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStats(b *testing.B) {
	s := mustParse(b, benchFile(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseStats is Parse followed by Stats once the file is read,
// over each collector's file (captured from real JDK 17 JVMs): the pools,
// collectors and entries differ from one collector to another.
func BenchmarkParseStats(b *testing.B) {
	for _, gc := range []string{"g1", "parallel", "serial", "shenandoah", "z"} {
		file := benchFixture(b, gc)
		b.Run(gc, func(b *testing.B) {
			b.SetBytes(int64(len(file)))
			b.ReportAllocs()
			for b.Loop() {
				s, err := Parse(file)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Stats(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLookup includes building the index on first use.
func BenchmarkLookup(b *testing.B) {
	file := benchFile(b)
	b.ReportAllocs()
	for b.Loop() {
		s, _ := Parse(file)
		if _, ok := s.Long("sun.os.hrt.frequency"); !ok {
			b.Fatal("missing")
		}
	}
}

// BenchmarkParseStatsPrev is what a scan costs per JVM read before without
// a Plan: a full ParseStats with the previous read's Stats.
func BenchmarkParseStatsPrev(b *testing.B) {
	for _, f := range rereadFiles(b) {
		b.Run(f.name, func(b *testing.B) { benchParseStatsAgain(b, f.file, nil) })
	}
}

// BenchmarkParseStatsPlan is the same read with the previous read's Plan.
func BenchmarkParseStatsPlan(b *testing.B) {
	for _, f := range rereadFiles(b) {
		b.Run(f.name, func(b *testing.B) { benchParseStatsAgain(b, f.file, new(Plan)) })
	}
}

// rereadFiles are the G1 fixture, and the same with a Spark executor's
// command line and JVM arguments, which a scan compares with the last
// read's and scans for -XX:MaxMetaspaceSize.
func rereadFiles(b *testing.B) []struct {
	name string
	file []byte
} {
	es := toTestEntries(mustParse(b, readFixture(b, "g1")).Entries)
	for i := range es {
		switch es[i].name {
		case "sun.rt.javaCommand":
			es[i].bytes = sparkCommand
		case "java.rt.vmArgs":
			es[i].bytes = sparkVMArgs
		}
	}
	spark := encode(binaryLE, es)
	return []struct {
		name string
		file []byte
	}{
		{"g1", benchFile(b)},
		{"g1-spark-executor", append(spark, make([]byte, 32<<10-len(spark))...)},
	}
}

const (
	sparkCommand = "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend" +
		" --driver-url spark://CoarseGrainedScheduler@ip-10-0-1-17.ec2.internal:35231" +
		" --executor-id 12 --hostname ip-10-0-3-45.ec2.internal --cores 4" +
		" --app-id application_1700000000000_0042 --resourceProfileId 0" +
		" --user-class-path file:/mnt/yarn/usercache/hadoop/appcache/application_1700000000000_0042/container_1700000000000_0042_01_000013/__app__.jar"
	sparkVMArgs = "-Xmx9216m -XX:+UseG1GC -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExitOnOutOfMemoryError" +
		" -XX:OnOutOfMemoryError=kill -9 %p -verbose:gc -XX:+PrintGCDetails" +
		" -Djava.io.tmpdir=/mnt/yarn/usercache/hadoop/appcache/application_1700000000000_0042/container_1700000000000_0042_01_000013/tmp" +
		" -Dspark.driver.port=35231 -Dspark.network.timeout=800s -Dspark.ui.port=0" +
		" -Dspark.history.ui.port=18080 -Dspark.authenticate=false" +
		" -Dspark.yarn.app.container.log.dir=/var/log/hadoop-yarn/containers/application_1700000000000_0042/container_1700000000000_0042_01_000013" +
		" -Dlog4j.configuration=file:/etc/spark/conf/log4j.properties -Dcom.amazonaws.sdk.disableCertChecking=false"
)

func benchParseStatsAgain(b *testing.B, file []byte, plan *Plan) {
	prev, _, err := ParseStats(file, nil, plan)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		st, _, err := ParseStats(file, &prev, plan)
		if err != nil {
			b.Fatal(err)
		}
		prev = st
	}
}
