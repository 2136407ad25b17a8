package cgroupid

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

func TestParseFixtures(t *testing.T) {
	f, err := os.Open("testdata/paths.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	cases := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		var want ID
		for _, kv := range fields[1:] {
			k, v, _ := strings.Cut(kv, "=")
			p := map[string]*string{"uid": &want.PodUID, "qos": &want.QoS, "container": &want.ContainerID,
				"runtime": &want.Runtime, "yarn": &want.YARNContainer}[k]
			if p == nil {
				t.Fatalf("unknown field %q in %q", k, line)
			}
			*p = v
		}
		if got := Parse(fields[0]); got != want {
			t.Errorf("Parse(%q)\n got  %+v\n want %+v", fields[0], got, want)
		}
		cases++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 20 {
		t.Fatalf("only %d fixtures read", cases)
	}
}

func TestQualifiedContainerID(t *testing.T) {
	for _, tc := range []struct {
		id   ID
		want string
	}{
		{ID{ContainerID: "abc", Runtime: RuntimeContainerd}, "containerd://abc"},
		{ID{ContainerID: "abc", Runtime: RuntimeCRIO}, "cri-o://abc"},
		{ID{ContainerID: "abc"}, "abc"},
		{ID{Runtime: RuntimeDocker}, ""},
	} {
		if got := tc.id.QualifiedContainerID(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.id, got, tc.want)
		}
	}
}
