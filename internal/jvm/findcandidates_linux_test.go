package jvm

import (
	"fmt"
	"os"
	"strconv"
)

// FindCandidates scans procPath for processes with an hsperfdata file, the
// way the JDK's jps finds JVMs in other mount and pid namespaces: for each
// pid, look in <procPath>/<pid>/root/tmp/hsperfdata_*/<nspid>. Each distinct
// root is listed once. Processes that vanish or cannot be inspected are
// left out: they are not JVMs this exporter can read. skip, when not nil,
// leaves out pids known not to be JVMs (the kernel's threads) before any
// file of theirs is looked at.
func FindCandidates(procPath string, skip func(pid int) bool) ([]Candidate, error) {
	dir, err := os.Open(procPath)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", procPath, err)
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", procPath, err)
	}
	// A process in procfs's own pid namespace has the same pid inside and
	// out; others need their status file read.
	procfsPIDNS := procfsPIDNamespace(procPath)

	// Every process is looked at on every scan: stat and readlink relative
	// to the open /proc, with one buffer, cost a fraction of full paths.
	dirfd := int(dir.Fd())
	link := make([]byte, 64)
	groups := map[rootKey][]int{}
	var order []rootKey
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 || (skip != nil && skip(pid)) {
			continue
		}
		key, ok := processRoot(dirfd, name, link)
		if !ok {
			continue
		}
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], pid)
	}

	sets := make([][]int, len(order))
	for i, key := range order {
		sets[i] = groups[key]
	}
	return candidatesIn(sets, func(pid int) (map[int][]string, error) { return listHsperfFiles(procPath, pid) },
		func(pid int) (int, error) { return pidInNamespace(procPath, procfsPIDNS, pid) }), nil
}
