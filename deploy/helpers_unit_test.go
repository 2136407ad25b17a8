package deploy

import "testing"

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		version string
		want    bool
	}{
		{"v5.7.1", true},
		{"v4.5.4", true},
		{"v4.5.10", true},
		{"v4.10.0", true},
		{"v4.5.3", false},
		{"v4.0.5", false},
		{"v2.0.3", false},
		{"v5.0.4-0.20230601165947-6ce0bf390ce3", true},
		{"", false},
		{"unknown", false},
	} {
		if got := versionAtLeast(c.version, minKustomize); got != c.want {
			t.Errorf("versionAtLeast(%q, %q) = %v, want %v", c.version, minKustomize, got, c.want)
		}
	}
}
