package procmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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

var errEmptyValue = errors.New("empty value")

// parseSingleUint parses a cgroup file holding one unsigned decimal number,
// such as memory.usage_in_bytes or memory.current.
func parseSingleUint(data []byte) (uint64, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, errEmptyValue
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

// parseKeyedUint finds key in a flat-keyed cgroup file ("key value" per line:
// memory.stat, memory.events, memory.oom_control). found is false when the
// key is absent, which is not an error: older kernels lack some keys. A
// present key with a bad value is an error.
func parseKeyedUint(data []byte, key string) (value uint64, found bool, err error) {
	// Line by line as bufio.Scanner splits them (a trailing \r dropped, a
	// line over its 64 KiB buffer an error), without its buffer's
	// allocation: memory.stat is read for every cgroup on every scan.
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(line) > maxCgroupFileLine {
			return 0, false, bufio.ErrTooLong
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
