// Command pause is the pod sandbox's process for test/kube's node: the
// kubelet asks containerd for a sandbox before a pod's containers, and
// containerd starts the sandbox image's entrypoint to hold the pod's
// namespaces. Like Kubernetes' own pause (build/pause/linux/pause.c), it
// sleeps until SIGINT or SIGTERM and, as pid 1 of a pod that shares its
// pid namespace, reaps orphans. Built static and packed as an OCI image by
// scripts/build-pause-image.sh: no registry is reachable here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		_, _ = os.Stderr.WriteString("pause: warning: not pid 1\n")
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
