package yarn_test

import (
	"fmt"
	"os"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/yarn"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

// How the rest of the exporter uses a Source: build it once, find a JVM's
// container from /proc, read the container's allocation while the JVM
// lives and its exit status once it is gone, hurry the polls while the
// JVM is near its allocation, and name its application.
func ExampleSource() {
	nm := yarntest.NewServer() // a NodeManager and ResourceManager
	defer nm.Close()
	nm.AddApp("application_1700000000000_0042", "nightly-sessionize", "hadoop")
	nm.Launch("container_1700000000000_0042_01_000002", 5632)

	s := yarn.NewSource(yarn.Config{NodeManagerURL: nm.URL, ResourceManagerURLs: []string{nm.URL}}, log.NewNopLogger())
	s.Start()
	defer s.Stop()

	// The container of a JVM: its CONTAINER_ID, or its log directory.
	id := "container_1700000000000_0042_01_000002"
	var c yarn.Container
	for ok := false; !ok; c, ok = s.Container(id) {
		time.Sleep(10 * time.Millisecond) // the first poll; callers never wait
	}
	fmt.Println("budget MiB:", c.Allocation>>20, "vmem limit MiB:", c.VmemLimit>>20)

	// Near the allocation: poll every HurryInterval for the next minute.
	s.Hurry(time.Now().Add(time.Minute))

	var name string
	for ok := false; !ok; name, ok = s.AppName(c.AppID) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("application:", name)

	nm.Finish(id, yarn.ExitKilledPmem, "Container [pid=1,containerID="+id+"] is running 1B beyond the 'PHYSICAL' memory limit. Current usage: 5.5 GB of 5.5 GB physical memory used; 6 GB of 11.6 GB virtual memory used. Killing container.")
	for c, _ = s.Container(id); !c.Finished(); c, _ = s.Container(id) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(os.Stdout, "exit status:", c.ExitCode, "kill:", c.Kill.Kind)
	// Output:
	// budget MiB: 5632 vmem limit MiB: 11827
	// application: nightly-sessionize
	// exit status: -104 kill: pmem
}
