// Package oom follows the kernel log (/dev/kmsg) and turns the OOM killer's
// lines into kill events, and judges from a victim's last JVM sample what
// filled its memory. It knows nothing of Prometheus.
package oom

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/labelvalue"
)

// Constraints the kernel names in the oom-kill: line (enum oom_constraint).
const (
	ConstraintNone         = "CONSTRAINT_NONE"
	ConstraintCpuset       = "CONSTRAINT_CPUSET"
	ConstraintMemoryPolicy = "CONSTRAINT_MEMORY_POLICY"
	ConstraintMemcg        = "CONSTRAINT_MEMCG"
)

// Kind says which of the OOM killer's lines a record was.
type Kind int

const (
	// KindSummary is "oom-kill:constraint=…,task=…,pid=N,uid=N" (Linux 4.19+),
	// printed before the kill; it alone names the constraint and memcgs.
	KindSummary Kind = iota + 1
	// KindKilled is "<scope>: Killed process N (comm) total-vm:…" on 5.x/6.x
	// or "Killed process N (comm) total-vm:…" on 4.x: one per process killed,
	// on every kernel, so it is what a kill is counted on.
	KindKilled
	// KindChosen is 4.x's "<scope>: Kill process N (comm) score N or
	// sacrifice child", printed before the Killed line (which may name a
	// child instead); it gives 4.x kills their scope.
	KindChosen
	// KindUsage is the memcg report's "memory: usage NkB, limit NkB,
	// failcnt N" (Key "memory") or cgroup v1's "kmem: usage NkB, …" (Key
	// "kmem"), printed before the kill: Value is the usage in bytes.
	KindUsage
	// KindStatsHeader is "Memory cgroup stats for <path>:", which the
	// container's memory.stat follows, a "key value" record per line
	// (KindStat) on Linux 5.x+, cgroup v1 and v2 alike.
	KindStatsHeader
	// KindStat is one "key value" line: Key and Value (bytes, as
	// memory.stat has them). Any record of that shape is one; only those
	// after a KindStatsHeader are memory.stat's (Assembler).
	KindStat
)

// Line is what one OOM-killer record says. Fields the line does not carry
// are zero.
type Line struct {
	Kind Kind
	PID  int
	Task string // the victim's comm, as the kernel printed it

	// From the summary line.
	Constraint string
	OOMMemcg   string // the memcg whose limit was hit; empty for a global OOM
	TaskMemcg  string // the victim's own memcg
	UID        int

	// From the Killed line. Scope is the text before ": Killed process" on
	// 5.x+ ("Memory cgroup out of memory", "Out of memory", …); empty on 4.x.
	Scope       string
	AnonRSSKiB  uint64
	FileRSSKiB  uint64
	ShmemRSSKiB uint64
	TotalVMKiB  uint64

	// From the memcg report: KindUsage, KindStat (Key, Value) and
	// KindStatsHeader (Memcg, the group whose stats follow).
	Key   string
	Value uint64
	Memcg string
}

// maxFieldBytes caps every string taken from a record: cgroup paths and
// comms are chosen by whoever names the container or the program.
const maxFieldBytes = 256

// ErrMalformed wraps the reason a record that looked like an OOM line could
// not be read; such a record costs only itself.
var ErrMalformed = errors.New("malformed OOM line")

// Message returns the text of one /dev/kmsg record
// ("prio,seq,usec,flags[,…];text\n KEY=value…"): the part after the first
// ';' up to the first newline (what follows are dictionary continuation
// lines). A record without a valid header — a line of `dmesg` output, a
// test file — is returned whole, minus a trailing newline.
func Message(record []byte) []byte {
	if head, text, ok := bytes.Cut(record, []byte{';'}); ok && validHeader(head) {
		record = text
	}
	if i := bytes.IndexByte(record, '\n'); i >= 0 {
		record = record[:i]
	}
	return bytes.TrimRight(record, "\r")
}

// validHeader checks "prio,seq,usec,flags": three decimal numbers then a
// flags field; kernels may append more comma-separated fields.
func validHeader(h []byte) bool {
	for field := 0; field < 3; field++ {
		digits := 0
		for digits < len(h) && h[digits] >= '0' && h[digits] <= '9' {
			digits++
		}
		if digits == 0 || digits == len(h) || h[digits] != ',' {
			return false
		}
		h = h[digits+1:]
	}
	return true // the flags field and any later ones are not checked
}

// Parse reads one kernel log record (with or without the /dev/kmsg header).
// ok is false for every record that is not an OOM kill line, which is
// nearly all of them; err is set when a record looked like one but could not
// be read.
func Parse(record []byte) (line Line, ok bool, err error) {
	msg := Message(record)
	if rest, found := bytes.CutPrefix(msg, []byte("oom-kill:")); found {
		line, err = parseSummary(string(rest))
		return line, err == nil, err
	}
	if i := bytes.Index(msg, []byte(": Kill process ")); i >= 0 && isScope(msg[:i]) {
		pidText, _, _ := bytes.Cut(msg[i+len(": Kill process "):], []byte{' '})
		pid, err := parsePID(string(pidText))
		if err != nil {
			return Line{}, false, err
		}
		return Line{Kind: KindChosen, PID: pid, Scope: capString(string(msg[:i]))}, true, nil
	}
	if line, ok, err := parseReport(msg); ok || err != nil {
		return line, ok, err
	}
	if i := bytes.Index(msg, []byte("Killed process ")); i >= 0 {
		scope := msg[:i]
		switch {
		case len(scope) == 0:
			// 4.x: the line starts with "Killed process".
		case bytes.HasSuffix(scope, []byte(": ")) && isScope(scope[:len(scope)-2]):
			scope = scope[:len(scope)-2]
		default:
			// Some other message mentioning a killed process (a driver, a
			// user's own log line written to /dev/kmsg): not ours.
			return Line{}, false, nil
		}
		line, err = parseKilled(string(msg[i+len("Killed process "):]))
		line.Scope = capString(string(scope))
		return line, err == nil, err
	}
	return Line{}, false, nil
}

// parseReport reads the lines of the memcg OOM report that say what the
// container held (mem_cgroup_print_oom_meminfo): "memory: usage …",
// "kmem: usage …", "Memory cgroup stats for <path>:" and memory.stat's
// "key value" lines.
func parseReport(msg []byte) (Line, bool, error) {
	for _, key := range []string{"memory", "kmem"} {
		rest, found := bytes.CutPrefix(msg, []byte(key+": usage "))
		if !found {
			continue
		}
		n, _, _ := bytes.Cut(rest, []byte{','})
		kib, err := strconv.ParseUint(string(bytes.TrimSuffix(n, []byte("kB"))), 10, 64)
		if err != nil || kib > 1<<50 {
			return Line{}, false, fmt.Errorf("%w: %s usage %q", ErrMalformed, key, capString(string(n)))
		}
		return Line{Kind: KindUsage, Key: key, Value: kib << 10}, true, nil
	}
	if rest, found := bytes.CutPrefix(msg, []byte("Memory cgroup stats for ")); found {
		return Line{Kind: KindStatsHeader, Memcg: capString(string(bytes.TrimSuffix(rest, []byte{':'})))}, true, nil
	}
	key, value, found := bytes.Cut(msg, []byte{' '})
	if !found || len(key) == 0 || len(key) > 64 || len(value) == 0 || len(value) > 20 {
		return Line{}, false, nil
	}
	for _, c := range key {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return Line{}, false, nil
		}
	}
	for _, c := range value {
		if c < '0' || c > '9' {
			return Line{}, false, nil
		}
	}
	n, err := strconv.ParseUint(string(value), 10, 64)
	if err != nil {
		return Line{}, false, nil //nolint:nilerr // beyond uint64: no memory.stat value, which is no failure
	}
	return Line{Kind: KindStat, Key: string(key), Value: n}, true, nil
}

// isScope accepts the messages oom_kill.c passes to __oom_kill_process:
// "Out of memory", "Memory cgroup out of memory", "Out of memory
// (oom_kill_allocating_task)" and future variations of them.
func isScope(s []byte) bool {
	return bytes.Contains(bytes.ToLower(s), []byte("out of memory"))
}

// summaryKeys are the keys of the oom-kill: line. The values of cpuset,
// nodemask, mems_allowed and the memcg paths may themselves contain commas
// ("0-1,3", a cgroup named "a,b"), so a comma only ends a value when a
// known key follows it.
var summaryKeys = map[string]bool{
	"constraint": true, "nodemask": true, "cpuset": true, "mems_allowed": true,
	"oom_memcg": true, "task_memcg": true, "task": true, "pid": true, "uid": true,
}

func parseSummary(s string) (Line, error) {
	line := Line{Kind: KindSummary}
	// pid and uid are printed last and are numbers, and task (a comm) may
	// hold commas: take them from the end first.
	rest, uidText, ok := cutLast(s, ",uid=")
	if !ok {
		return line, fmt.Errorf("%w: oom-kill line without uid=", ErrMalformed)
	}
	rest, pidText, ok := cutLast(rest, ",pid=")
	if !ok {
		return line, fmt.Errorf("%w: oom-kill line without pid=", ErrMalformed)
	}
	rest, task, ok := cutLast(rest, ",task=")
	if !ok {
		return line, fmt.Errorf("%w: oom-kill line without task=", ErrMalformed)
	}
	var err error
	if line.PID, err = parsePID(pidText); err != nil {
		return line, err
	}
	if line.UID, err = strconv.Atoi(uidText); err != nil || line.UID < 0 {
		return line, fmt.Errorf("%w: uid %q", ErrMalformed, capString(uidText))
	}
	line.Task = capString(task)

	fields := map[string]string{}
	key := ""
	for _, tok := range strings.Split(rest, ",") {
		k, v, hasEq := strings.Cut(tok, "=")
		switch {
		case hasEq && summaryKeys[k]:
			key = k
			fields[key] = v
		case tok == "global_oom":
			key = ""
		case key != "":
			fields[key] += "," + tok
		}
	}
	line.Constraint = capString(fields["constraint"])
	if !strings.HasPrefix(line.Constraint, "CONSTRAINT_") {
		return line, fmt.Errorf("%w: constraint %q", ErrMalformed, line.Constraint)
	}
	line.OOMMemcg = capString(fields["oom_memcg"])
	line.TaskMemcg = capString(fields["task_memcg"])
	return line, nil
}

// parseKilled reads what follows "Killed process ": "N (comm) total-vm:…kB,
// anon-rss:…kB, file-rss:…kB, shmem-rss:…kB[, UID:… pgtables:…kB
// oom_score_adj:…]".
func parseKilled(s string) (Line, error) {
	line := Line{Kind: KindKilled}
	pidText, rest, ok := strings.Cut(s, " (")
	if !ok {
		return line, fmt.Errorf("%w: killed line without (comm)", ErrMalformed)
	}
	var err error
	if line.PID, err = parsePID(pidText); err != nil {
		return line, err
	}
	// A comm may contain ") " itself; the sizes follow the last ") total-vm:"
	// when present, else the last ')'.
	end := strings.LastIndex(rest, ") total-vm:")
	if end < 0 {
		end = strings.LastIndexByte(rest, ')')
	}
	if end < 0 {
		return line, fmt.Errorf("%w: killed line without closing ')'", ErrMalformed)
	}
	line.Task = capString(rest[:end])
	for _, tok := range strings.FieldsFunc(rest[end+1:], func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(tok, ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch k {
		case "total-vm":
			dst = &line.TotalVMKiB
		case "anon-rss":
			dst = &line.AnonRSSKiB
		case "file-rss":
			dst = &line.FileRSSKiB
		case "shmem-rss":
			dst = &line.ShmemRSSKiB
		default:
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(v, "kB"), 10, 64)
		if err != nil {
			return line, fmt.Errorf("%w: %s %q", ErrMalformed, k, capString(v))
		}
		*dst = n
	}
	return line, nil
}

func parsePID(s string) (int, error) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 || pid > 1<<22 { // PID_MAX_LIMIT
		return 0, fmt.Errorf("%w: pid %q", ErrMalformed, capString(s))
	}
	return pid, nil
}

// cutLast splits s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// capString bounds a string taken from the kernel log and keeps it valid
// UTF-8: /dev/kmsg escapes bytes it considers unprintable, but a plain file
// fed in tests need not.
func capString(s string) string { return labelvalue.Cap(s, maxFieldBytes) }
