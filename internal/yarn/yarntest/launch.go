package yarntest

import (
	"os"
	"path/filepath"
	"strings"
)

// ContainerLaunch is what a NodeManager gives an executor's JVM that
// identifies its container: CONTAINER_ID in the environment, the working
// directory …/appcache/<application>/<container>, and Spark's
// -Dspark.yarn.app.container.log.dir=…/<application>/<container>.
type ContainerLaunch struct {
	Dir     string   // the working directory, created
	LogDir  string   // the container's log directory, created
	JVMArgs []string // -Dspark.yarn.app.container.log.dir=LogDir
	Prelude string   // for testjvm.Options.Prelude: cd Dir, export CONTAINER_ID and the NodeManager's variables
}

// Launch lays out a container's directories under root, as a NodeManager
// with yarn.nodemanager.local-dirs=root/local and log-dirs=root/logs does.
func Launch(root, user, appID, containerID string) (ContainerLaunch, error) {
	dir := filepath.Join(root, "local", "usercache", user, "appcache", appID, containerID)
	logDir := filepath.Join(root, "logs", appID, containerID)
	for _, d := range []string{dir, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return ContainerLaunch{}, err
		}
	}
	env := map[string]string{"CONTAINER_ID": containerID, "USER": user, "HADOOP_USER_NAME": user,
		"LOG_DIRS": logDir, "PWD": dir, "NM_HOST": "node-1", "NM_HTTP_PORT": "8042"}
	var b strings.Builder
	b.WriteString("cd " + quote(dir) + " && ")
	for _, k := range []string{"CONTAINER_ID", "USER", "HADOOP_USER_NAME", "LOG_DIRS", "PWD", "NM_HOST", "NM_HTTP_PORT"} {
		b.WriteString("export " + k + "=" + quote(env[k]) + " && ")
	}
	return ContainerLaunch{Dir: dir, LogDir: logDir, Prelude: b.String(),
		JVMArgs: []string{"-Dspark.yarn.app.container.log.dir=" + logDir}}, nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
