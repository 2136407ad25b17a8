package jvm

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"golang.org/x/sys/unix"
)

// FindCandidates scans procPath for processes with an hsperfdata file, the
// way the JDK's jps finds JVMs in other mount and pid namespaces: for each
// pid, look in <procPath>/<pid>/root/tmp/hsperfdata_*/<nspid>. Each distinct
// root is listed once. Processes that vanish or cannot be inspected are
// left out: they are not JVMs this exporter can read. skip, when not nil,
// leaves out pids known not to be JVMs (the kernel's threads) before any
// file of theirs is looked at.
func FindCandidates(procPath string, skip func(pid int) bool) ([]Candidate, error) {
	// A new watch has looked at no root and no namespace yet: its table
	// reads each as it is asked.
	w, err := procmem.NewProcessWatch(procPath)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	table, err := w.Scan(time.Now())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", procPath, err)
	}
	groups := map[procmem.Root][]int{}
	var order []procmem.Root
	for _, pid := range table.PIDs() {
		if skip != nil && skip(pid) {
			continue
		}
		key, ok := table.Root(pid)
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
	return candidatesIn(sets, func(pid int) (map[int][]string, error) { return listHsperfFiles(procPath, pid) }, table.NSPID), nil
}

// listHsperfFiles lists <root>/tmp/hsperfdata_*/<number> beneath the
// process's root without following any symlink, and maps each number to the
// directories holding it.
func listHsperfFiles(procPath string, pid int) (map[int][]string, error) {
	root, err := openRoot(procPath, pid)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	tmp, err := openBeneath(root, "tmp", unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer tmp.Close()
	names, err := tmp.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	files := map[int][]string{}
	for _, name := range names {
		if !strings.HasPrefix(name, "hsperfdata_") {
			continue
		}
		dir, err := openBeneath(int(tmp.Fd()), name, unix.O_DIRECTORY)
		if err != nil {
			continue // a symlink, a file, or gone: not a JVM's directory
		}
		entries, err := dir.Readdirnames(-1)
		_ = dir.Close()
		if err != nil {
			continue
		}
		for _, e := range entries {
			if n, err := strconv.Atoi(e); err == nil && n > 0 && strconv.Itoa(n) == e {
				files[n] = append(files[n], name)
			}
		}
	}
	return files, nil
}
