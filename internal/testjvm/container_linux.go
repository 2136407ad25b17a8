package testjvm

import (
	"fmt"
	"os"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// InContainer makes o start the JVM as in a container: its own pid and
// mount namespaces and a private /tmp, which die with it. A JVM that
// starts in a /tmp deletes the hsperfdata files of that user's dead JVMs,
// so tests that judge a JVM's end from its file keep it from other tests'
// JVMs this way. Needs root and unshare.
func InContainer(t testing.TB, o Options) Options {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "unshare")
	// The private /tmp hides the host's, where the test classes are: carry
	// them over with a bind mount through a directory outside /tmp.
	classes := Classpath(t)
	carry, err := os.MkdirTemp("/var/tmp", "executor-exporter-jvm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(carry) })
	o.Wrapper = []string{"unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private"}
	o.Prelude = fmt.Sprintf("mount --bind %[1]s %[2]s && mount -t tmpfs tmpfs /tmp && mkdir -p %[1]s && mount --bind %[2]s %[1]s && ", classes, carry) + o.Prelude
	return o
}
