package procmem

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestParseNSPID(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"Name:\tjava\nNSpid:\t4242\n", 4242, false},
		{"Name:\tjava\nNSpid:\t4242\t17\t1\nPPid:\t1\n", 1, false},
		{"Name:\tjava\n", 0, true},
		{"NSpid:\t\n", 0, true},
		{"NSpid:\tx\n", 0, true},
	}
	for _, tt := range tests {
		got, err := parseNSPID([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseNSPID(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// FuzzParseNSPID: a pid comes only from the first NSpid line, as the
// number its last field spells; lines before it that are not NSpid lines,
// and any line after it, change nothing. testdata/fuzz keeps a pid out of
// int's range, which once failed these checks.
func FuzzParseNSPID(f *testing.F) {
	f.Add([]byte("Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t48213\nNgid:\t0\nPid:\t48213\nPPid:\t48190\n" +
		"TracerPid:\t0\nUid:\t185\t185\t185\t185\nGid:\t0\t0\t0\t0\nFDSize:\t512\nGroups:\t0 \n" +
		"NStgid:\t48213\t1\nNSpid:\t48213\t1\nNSpgid:\t48213\t1\nNSsid:\t48213\t1\nVmPeak:\t 9123456 kB\nThreads:\t61\n"))
	f.Add([]byte("Name:\tjava\nPid:\t4242\nNSpid:\t4242\n"))
	f.Add([]byte("NSpid:\t4242\t17\t1\n"))
	f.Add([]byte("NSpid:\t\n"))
	f.Add([]byte("NSpid:\tx\n"))
	f.Add([]byte("Name:\tjava\n"))
	f.Add([]byte("NSpid:0 A"))
	f.Add([]byte("NSpid:\u037a 0")) // a separator strings.Fields does not split on
	f.Fuzz(func(t *testing.T, status []byte) {
		pid, err := parseNSPID(status)
		var line string
		found := false
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "NSpid:") {
				line, found = l, true
				break
			}
		}
		// On error the pid means nothing (strconv's range error comes
		// with ±MaxInt) and the caller drops it.
		if err == nil {
			if !found {
				t.Fatalf("pid %d without an NSpid line", pid)
			}
			fields := strings.Fields(strings.TrimPrefix(line, "NSpid:"))
			if len(fields) == 0 {
				t.Fatalf("pid %d from an empty NSpid line", pid)
			}
			if n, perr := strconv.Atoi(fields[len(fields)-1]); perr != nil || n != pid {
				t.Fatalf("pid %d, last field of %q is %q", pid, line, fields[len(fields)-1])
			}
		}
		// The first NSpid line decides: another after it is ignored.
		if pid2, err2 := parseNSPID(append(bytes.Clone(status), "\nNSpid:\t1\t99\n"...)); found && (pid2 != pid || (err2 == nil) != (err == nil)) {
			t.Fatalf("a later NSpid line changed %d, %v into %d, %v", pid, err, pid2, err2)
		}
		if pid3, err3 := parseNSPID(append([]byte("Name:\tjava\nPid:\t7\n"), status...)); pid3 != pid || (err3 == nil) != (err == nil) {
			t.Fatalf("leading lines changed %d, %v into %d, %v", pid, err, pid3, err3)
		}
	})
}
