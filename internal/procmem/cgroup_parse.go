package procmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
)

// v1UnlimitedThreshold: cgroup v1 reports "no limit" as PAGE_COUNTER_MAX
// pages in bytes, i.e. 2^63-1 rounded down to the page size (so the exact
// value depends on the page size). Anything this large cannot be a real limit.
const v1UnlimitedThreshold = 1 << 62

// maxCgroupPathLen bounds the path taken from /proc/<pid>/cgroup; the kernel
// never produces anything near PATH_MAX here for real containers.
const maxCgroupPathLen = 4096

// maxCgroupFileLine is the longest line procfs's parser (a bufio.Scanner
// with its default buffer) accepts; longer ones are an error there and
// stay one here, so the two parsers agree on every input.
const maxCgroupFileLine = 64<<10 - 1

// parseSingleUint parses a cgroup file holding one unsigned decimal number,
// such as memory.usage_in_bytes or memory.current.
func parseSingleUint(data []byte) (uint64, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, errors.New("empty value")
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an unsigned integer: %q", truncate(s, 64))
	}
	return v, nil
}

// parseV1Limit parses memory.limit_in_bytes; 0 means unlimited.
func parseV1Limit(data []byte) (uint64, error) {
	v, err := parseSingleUint(data)
	if err != nil {
		return 0, err
	}
	if v >= v1UnlimitedThreshold {
		return 0, nil
	}
	return v, nil
}

// parseV2Max parses memory.max: "max" or a number of bytes; 0 means unlimited.
func parseV2Max(data []byte) (uint64, error) {
	if strings.TrimSpace(string(data)) == "max" {
		return 0, nil
	}
	return parseSingleUint(data)
}

// nextLine splits the first line off a cgroup file as bufio.Scanner would
// (a trailing \r dropped, a line over its 64 KiB buffer an error), without
// its buffer's allocation: memory.stat is read for every cgroup on every
// scan.
func nextLine(data []byte) (line, rest []byte, err error) {
	line, rest, _ = bytes.Cut(data, []byte{'\n'})
	if len(line) > maxCgroupFileLine {
		return nil, nil, bufio.ErrTooLong
	}
	return bytes.TrimSuffix(line, []byte{'\r'}), rest, nil
}

// parseKeyedUint finds key in a flat-keyed cgroup file ("key value" per line:
// memory.stat, memory.events, memory.oom_control). found is false when the
// key is absent, which is not an error: older kernels lack some keys. A
// present key with a bad value is an error.
func parseKeyedUint(data []byte, key string) (value uint64, found bool, err error) {
	for len(data) > 0 {
		line, rest, err := nextLine(data)
		if err != nil {
			return 0, false, err
		}
		data = rest
		name, val, ok := bytes.Cut(line, []byte{' '})
		if !ok || string(name) != key {
			continue
		}
		v, err := parseDecimal(bytes.TrimSpace(val))
		if err != nil {
			return 0, true, fmt.Errorf("%s: not an unsigned integer: %q", key, truncate(string(val), 64))
		}
		return v, true, nil
	}
	return 0, false, nil
}

// memoryStat is what a scan takes from memory.stat: the inactive file
// pages for the working set, and the cgroup's memory by kind. Every field
// is hierarchical (the cgroup and its descendants), as usage is.
type memoryStat struct {
	inactiveFile              uint64
	anon, file, shmem, kernel uint64
	// Whether memory.stat had the kind: cgroup v1 has no kernel figure.
	hasAnon, hasFile, hasShmem, hasKernel bool
}

// statKey is a memory.stat key a scan uses, under either version's name.
type statKey int8

const (
	keyInactiveFile statKey = iota // v1 total_inactive_file, v2 inactive_file
	keyAnon                        // v1 total_rss, v2 anon
	keyFile                        // v1 total_cache, v2 file
	keyShmem                       // v1 total_shmem, v2 shmem
	// v1's own-cgroup figures, for a memory.stat without the total_ ones.
	keyRSS
	keyCache
	keyShmemLocal
	// v2: kernel is kmem (5.18+); sock is charged beside it. Older kernels
	// give only kmem's parts.
	keyKernel
	keySock
	keyKernelStack
	keyPagetables
	keySecPagetables
	keyPercpu
	keyVmalloc
	keySlab
	numStatKeys
)

// statKeys maps each version's memory.stat names to the keys a scan uses.
var (
	v1StatKeys = map[string]statKey{
		"total_inactive_file": keyInactiveFile,
		"total_rss":           keyAnon,
		"total_cache":         keyFile,
		"total_shmem":         keyShmem,
		"rss":                 keyRSS,
		"cache":               keyCache,
		"shmem":               keyShmemLocal,
	}
	v2StatKeys = map[string]statKey{
		"inactive_file":  keyInactiveFile,
		"anon":           keyAnon,
		"file":           keyFile,
		"shmem":          keyShmem,
		"kernel":         keyKernel,
		"sock":           keySock,
		"kernel_stack":   keyKernelStack,
		"pagetables":     keyPagetables,
		"sec_pagetables": keySecPagetables,
		"percpu":         keyPercpu,
		"vmalloc":        keyVmalloc,
		"slab":           keySlab,
	}
)

// parseMemoryStat reads a memory.stat in one pass, split as
// parseKeyedUint splits it, without allocating. The first line of a key
// counts; a key the result uses with a bad value is an error, and an
// absent one is not (kernels differ).
func parseMemoryStat(data []byte, v2 bool) (memoryStat, error) {
	var names, vals [numStatKeys][]byte
	var seen uint32
	keys := v1StatKeys
	if v2 {
		keys = v2StatKeys
	}
	for len(data) > 0 {
		line, rest, err := nextLine(data)
		if err != nil {
			return memoryStat{}, err
		}
		data = rest
		name, val, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			continue
		}
		if k, ok := keys[string(name)]; ok && seen&(1<<k) == 0 {
			names[k], vals[k] = name, val
			seen |= 1 << k
		}
	}

	var err error
	value := func(k statKey) (uint64, bool) {
		if seen&(1<<k) == 0 || err != nil {
			return 0, false
		}
		v, perr := parseDecimal(bytes.TrimSpace(vals[k]))
		if perr != nil {
			err = fmt.Errorf("%s: not an unsigned integer: %q", names[k], truncate(string(vals[k]), 64))
		}
		return v, perr == nil
	}
	// firstOf is the value of k, or else of its fallback.
	firstOf := func(k, fallback statKey) (uint64, bool) {
		if seen&(1<<k) != 0 {
			return value(k)
		}
		return value(fallback)
	}

	var s memoryStat
	s.inactiveFile, _ = value(keyInactiveFile)
	if !v2 {
		s.anon, s.hasAnon = firstOf(keyAnon, keyRSS)
		s.file, s.hasFile = firstOf(keyFile, keyCache)
		s.shmem, s.hasShmem = firstOf(keyShmem, keyShmemLocal)
	} else {
		s.anon, s.hasAnon = value(keyAnon)
		s.file, s.hasFile = value(keyFile)
		s.shmem, s.hasShmem = value(keyShmem)
		parts := []statKey{keyKernel, keySock}
		if seen&(1<<keyKernel) == 0 {
			parts = []statKey{keyKernelStack, keyPagetables, keySecPagetables, keyPercpu, keySock, keyVmalloc, keySlab}
		}
		for _, k := range parts {
			if v, ok := value(k); ok {
				s.kernel, s.hasKernel = addSaturating(s.kernel, v), true
			}
		}
	}
	if err != nil {
		return memoryStat{}, err
	}
	return s, nil
}

// addSaturating keeps a sum of untrusted values from wrapping around.
func addSaturating(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// parseDecimal is strconv.ParseUint(string(b), 10, 64) without the
// string's allocation for the numbers the kernel writes.
func parseDecimal(b []byte) (uint64, error) {
	if len(b) == 0 || len(b) > 19 { // 19 digits never overflow
		return strconv.ParseUint(string(b), 10, 64)
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return strconv.ParseUint(string(b), 10, 64)
		}
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}

// workingSet is usage minus inactive file cache, floored at zero, as cAdvisor
// computes container_memory_working_set_bytes (what the kubelet evicts on).
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

// cleanCgroupPath turns the path from /proc/<pid>/cgroup into a path relative
// to the hierarchy's mount point. It rejects anything that could leave the
// mount: ".." appears when the process sits outside the reader's cgroup
// namespace, and such a path names nothing under our sysfs.
func cleanCgroupPath(p string) (string, error) {
	if len(p) > maxCgroupPathLen {
		return "", fmt.Errorf("cgroup path longer than %d bytes", maxCgroupPathLen)
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("cgroup path %q is not absolute", truncate(p, 128))
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("cgroup path contains a NUL byte")
	}
	for rest := p; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, "/")
		if part == ".." {
			return "", fmt.Errorf("cgroup path %q leaves the cgroup namespace root (the exporter must run in the host cgroup namespace)", truncate(p, 128))
		}
	}
	rel := strings.TrimPrefix(path.Clean(p), "/")
	if rel == "" {
		rel = "."
	}
	return rel, nil
}

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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
