package procmem

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// cgroupFileSeeds are /proc/<pid>/cgroup contents: real ones (a cgroup v1
// host with a hybrid unified line, a v2 host, co-mounted controllers as
// systemd mounts them) and malformed ones.
var cgroupFileSeeds = []string{
	"12:memory:/kubepods/burstable/pod1/abc\n11:cpu,cpuacct:/kubepods/burstable/pod1/abc\n1:name=systemd:/kubepods\n0::/\n",
	"9:name=systemd:/\n8:pids:/\n4:memory:/process_api/bd5be6\n1:cpu:/\n0::/\n",
	"0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope\n",
	"0::/\n4:memory:/after-unified\n",
	"4:cpu,memory:/comount\n",
	"4:memory,,cpu:/odd\n",
	"4:memory:/a:b\n",
	"4:memory:/crlf\r\n0::/\r\n",
	"4:memory:/first\n5:memory:/second\n",
	"0::/first\n0::/second\n",
	"+0::/signed\n",
	"9:name=systemd:/\n8:pids:/\n1:cpu:/\n",
	"4:memory:/no-newline",
	"",
	"\n",
	"4:memory:/x\n\n",
	"garbage line\n",
	"x:memory:/x\n",
	"4:memory\n",
	"4:memory:/x\n4:cpu\n",
	"4:memory:/" + strings.Repeat("a", 70000) + "\n",
	"1:cpu:/\n2:cpu:/" + strings.Repeat("b", bufio.MaxScanTokenSize-8) + "\n4:memory:/x\n",
	"1:cpu:/\n2:cpu:/" + strings.Repeat("b", bufio.MaxScanTokenSize-7) + "\n4:memory:/x\n",
}

func TestParseMemoryLine(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    memoryLine
		wantErr string
	}{
		{in: cgroupFileSeeds[0], want: memoryLine{controllers: "memory", path: "/kubepods/burstable/pod1/abc"}},
		{in: cgroupFileSeeds[2], want: memoryLine{v2: true, path: "/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope"}},
		{in: cgroupFileSeeds[3], want: memoryLine{controllers: "memory", path: "/after-unified"}},
		{in: cgroupFileSeeds[4], want: memoryLine{controllers: "cpu,memory", path: "/comount"}},
		{in: cgroupFileSeeds[6], want: memoryLine{controllers: "memory", path: "/a:b"}},
		{in: cgroupFileSeeds[7], want: memoryLine{controllers: "memory", path: "/crlf"}},
		{in: cgroupFileSeeds[8], want: memoryLine{controllers: "memory", path: "/first"}},
		{in: cgroupFileSeeds[9], want: memoryLine{v2: true, path: "/first"}},
		{in: cgroupFileSeeds[10], want: memoryLine{v2: true, path: "/signed"}},
		{in: cgroupFileSeeds[12], want: memoryLine{controllers: "memory", path: "/no-newline"}},
		{in: cgroupFileSeeds[11], wantErr: "no memory cgroup"},
		{in: "", wantErr: "no memory cgroup"},
		{in: "\n", wantErr: "3+ fields"},
		{in: cgroupFileSeeds[15], wantErr: "3+ fields"}, // an empty line after the memory one
		{in: cgroupFileSeeds[17], wantErr: "not a number"},
		{in: cgroupFileSeeds[19], wantErr: "3+ fields"},
		{in: cgroupFileSeeds[20], wantErr: "too long"},
	} {
		got, err := parseMemoryLine(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error = %v, want containing %q", truncate(tc.in, 60), err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", truncate(tc.in, 60), got, err, tc.want)
		}
	}
}

// scannerKeyedUint is parseKeyedUint as bufio.Scanner splits lines, the
// reference the allocation-free version must match.
func scannerKeyedUint(data []byte, key string) (uint64, bool, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), " ")
		if !ok || name != key {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
		if err != nil {
			return 0, true, errors.New("bad value")
		}
		return v, true, nil
	}
	return 0, false, sc.Err()
}
