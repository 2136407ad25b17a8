package procmem

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// maxCgroupFileLine is the longest line procfs's parser (a bufio.Scanner
// with its default buffer) accepts; longer ones are an error there and
// stay one here, so the two parsers agree on every input.
const maxCgroupFileLine = 64<<10 - 1

var errNoMemoryCgroup = errors.New("no memory cgroup (neither a v1 memory controller nor a v2 unified line)")

// memoryLine is the line of /proc/<pid>/cgroup that governs memory.
type memoryLine struct {
	v2 bool // the unified hierarchy's line: no v1 memory controller
	// controllers is the line's second field as written: a v1 hierarchy's
	// comma-separated controllers, which name its mount directory.
	controllers string
	path        string // the cgroup's path, relative to the namespace root
}

// parseMemoryLine picks the memory line from the contents of a
// /proc/<pid>/cgroup file. A v1 memory controller wins over the unified
// line: in hybrid mode the unified hierarchy carries no memory controller.
// Every line must be well formed ("id:controllers:path" with a numeric
// id), as procfs requires, even when the memory line is found before a
// malformed one. It keeps substrings of data and allocates nothing on
// success. FuzzParseMemoryLine and TestParseMemoryLineLive hold it to
// procfs's parser.
func parseMemoryLine(data string) (memoryLine, error) {
	var v1, unified memoryLine
	var haveV1, haveUnified bool
	for len(data) > 0 {
		line, rest, _ := strings.Cut(data, "\n")
		data = rest
		if len(line) > maxCgroupFileLine {
			return memoryLine{}, errors.New("line too long")
		}
		line = strings.TrimSuffix(line, "\r")
		id, after, ok := strings.Cut(line, ":")
		controllers, cgPath, ok2 := strings.Cut(after, ":")
		if !ok || !ok2 {
			return memoryLine{}, fmt.Errorf("3+ fields required in cgroup line %q", truncate(line, 128))
		}
		n, err := strconv.Atoi(id)
		if err != nil {
			return memoryLine{}, fmt.Errorf("hierarchy ID %q is not a number", truncate(id, 32))
		}
		switch {
		case !haveV1 && hasController(controllers, "memory"):
			v1, haveV1 = memoryLine{controllers: controllers, path: cgPath}, true
		case !haveUnified && n == 0 && controllers == "":
			unified, haveUnified = memoryLine{v2: true, path: cgPath}, true
		}
	}
	switch {
	case haveV1:
		return v1, nil
	case haveUnified:
		return unified, nil
	}
	return memoryLine{}, errNoMemoryCgroup
}

// hasController reports whether the comma-separated list names c.
func hasController(list, c string) bool {
	for list != "" {
		var name string
		name, list, _ = strings.Cut(list, ",")
		if name == c {
			return true
		}
	}
	return false
}

// mounts returns the candidate mount directories, relative to sysfs, of
// the line's hierarchy. Co-mounted v1 controllers get a directory named
// after all of them; systemd adds a "memory" symlink to it.
func (l memoryLine) mounts() []string {
	if l.v2 {
		return []string{"fs/cgroup"}
	}
	dirs := []string{path.Join("fs/cgroup", l.controllers)}
	if strings.Contains(l.controllers, ",") {
		dirs = append(dirs, "fs/cgroup/memory")
	}
	return dirs
}
