package yarn

import (
	"bytes"
	"path"
	"strings"
)

// ContainerIDOf finds the YARN container a process runs in from what
// /proc says of it, in the order of trust: CONTAINER_ID in its environment
// (/proc/<pid>/environ, NUL-separated; the NodeManager sets it for every
// container), the last element of
// -Dspark.yarn.app.container.log.dir=… on its command line
// (/proc/<pid>/cmdline; Spark's launch context sets it for the executor),
// and its working directory (the /proc/<pid>/cwd link's target:
// …/appcache/<application>/<container>). Any of them may be nil or empty
// (environ needs CAP_SYS_PTRACE for another user's process).
func ContainerIDOf(environ, cmdline []byte, cwd string) (string, bool) {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("CONTAINER_ID=")); ok && ValidContainerID(string(v)) {
			return string(v), true
		}
	}
	const logDir = "-Dspark.yarn.app.container.log.dir="
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if v, ok := bytes.CutPrefix(arg, []byte(logDir)); ok {
			if id := path.Base(strings.TrimRight(string(v), "/")); ValidContainerID(id) {
				return id, true
			}
		}
	}
	if dir, id := path.Split(strings.TrimRight(cwd, "/")); ValidContainerID(id) && strings.Contains(dir, "/appcache/") {
		return id, true
	}
	return "", false
}
