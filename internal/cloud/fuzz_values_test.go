package cloud

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets of the value helpers: zones, label values, lifecycles and
// node label names. fuzz_test.go holds the document parsers' and the
// shared checks.

// FuzzLastSegment: no "/" in the result, which ends the trimmed input.
func FuzzLastSegment(f *testing.F) {
	for _, s := range []string{"projects/123456789012/zones/europe-west1-b", "projects/1/machineTypes/n2-standard-8",
		"n2-standard-8", " a/b ", "a/", "/", "", "aws:///eu-west-1a/i-0abc", "\u00a0 ", "\xff   "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := lastSegment(s)
		trimmed := strings.TrimSpace(s)
		if strings.Contains(got, "/") || !strings.HasSuffix(trimmed, got) {
			t.Fatalf("lastSegment(%q) = %q", s, got)
		}
		if !strings.Contains(trimmed, "/") && got != trimmed {
			t.Fatalf("lastSegment(%q) = %q without a /", s, got)
		}
		if strings.Contains(trimmed, "/") && !strings.HasSuffix(trimmed, "/"+got) {
			t.Fatalf("lastSegment(%q) = %q is not after the last /", s, got)
		}
	})
}

// FuzzRegionFromZone: a region is the zone without its final letter (and
// the "-" before it, or after a digit), or "". testdata/fuzz keeps an
// input that once failed.
func FuzzRegionFromZone(f *testing.F) {
	for _, s := range []string{"eu-west-1a", "us-east-1b", "europe-west1-b", "us-central1-f", "westeurope-2",
		"use1-az1", "eu-west-1", "a", "-a", "1a", "ab", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, zone string) {
		r := regionFromZone(zone)
		if r == "" {
			return
		}
		last := zone[len(zone)-1]
		if last < 'a' || last > 'z' {
			t.Fatalf("region %q of %q, which does not end in a letter", r, zone)
		}
		switch zone {
		case r + "-" + string(last):
		case r + string(last):
			if c := r[len(r)-1]; c < '0' || c > '9' {
				t.Fatalf("region %q of %q does not end in a digit", r, zone)
			}
		default:
			t.Fatalf("region %q of %q", r, zone)
		}
	})
}

// FuzzCleanValue: the result is a label value as CleanValue promises,
// cleaning again changes nothing, and a value already clean is kept.
// testdata/fuzz keeps a value whose cut ended on a space.
func FuzzCleanValue(f *testing.F) {
	for _, s := range []string{"r5.xlarge", "  eu-west-1 \n", "a\xffb", "\u00a0spot\u2003", "ab€", "",
		strings.Repeat("x", 200), strings.Repeat("€", 50), "\u00a00\xe2\x80000\x83", strings.Repeat("0", 128) + "\xf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := CleanValue(s)
		checkLabelValue(t, "CleanValue", got)
		if again := CleanValue(got); again != got {
			t.Fatalf("CleanValue(%q) = %q, then %q", s, got, again)
		}
		if trimmed := strings.TrimSpace(s); utf8.ValidString(trimmed) && len(trimmed) <= MaxLabelValueBytes && got != trimmed {
			t.Fatalf("CleanValue(%q) = %q, want %q", s, got, trimmed)
		}
	})
}

// FuzzNormalizeLifecycle: always one of the three values, which are fixed
// points; surrounding white space and ASCII case do not matter.
func FuzzNormalizeLifecycle(f *testing.F) {
	for _, s := range []string{"spot", "SPOT", "Spot", "Regular", "Low", "on-demand", "ON_DEMAND", "CAPACITY_BLOCK",
		"reserved", "STANDARD", "true", "FALSE", " preemptible\n", "unknown", "", "\u00a0spot ", "цц"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NormalizeLifecycle(s)
		checkLifecycle(t, s, got)
		if again := NormalizeLifecycle(got); again != got {
			t.Fatalf("NormalizeLifecycle(%q) = %q, then %q", s, got, again)
		}
		if spaced := NormalizeLifecycle(" \t" + s + "\n "); spaced != got {
			t.Fatalf("NormalizeLifecycle(%q) = %q, with spaces %q", s, got, spaced)
		}
		if upper := NormalizeLifecycle(asciiUpper(s)); upper != got {
			t.Fatalf("NormalizeLifecycle(%q) = %q, upper-cased %q", s, got, upper)
		}
	})
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// FuzzNodeLabelName: always a valid Prometheus label name starting with
// "label_"; a name already lower-case snake is only prefixed.
func FuzzNodeLabelName(f *testing.F) {
	for _, s := range []string{"eks.amazonaws.com/capacityType", "topology.kubernetes.io/zone", "karpenter.sh/nodepool",
		"kubernetes.azure.com/scalesetpriority", "node-role.kubernetes.io/control-plane", "ABCDef", "a_b", "é/ü", "\xff", "", "0AA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NodeLabelName(s)
		if !promLabelName.MatchString(got) || !strings.HasPrefix(got, "label_") {
			t.Fatalf("NodeLabelName(%q) = %q", s, got)
		}
		if strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == "" && got != "label_"+s {
			t.Fatalf("NodeLabelName(%q) = %q, want label_%s", s, got, s)
		}
	})
}

// checkLabelPairs checks the promises of NodeLabelPairs: one pair per
// label in Kubernetes-name order, each name valid, unique and starting
// with its label's sanitised name, each value clean.
func checkLabelPairs(t *testing.T, labels map[string]string) {
	t.Helper()
	names, values := NodeLabelPairs(labels)
	if len(names) != len(labels) || len(values) != len(labels) {
		t.Fatalf("%d labels gave %d names, %d values", len(labels), len(names), len(values))
	}
	keys := slices.Sorted(maps.Keys(labels))
	seen := map[string]string{}
	for i, k := range keys {
		name := names[i]
		if !promLabelName.MatchString(name) || !strings.HasPrefix(name, NodeLabelName(k)) {
			t.Fatalf("label %q named %q", k, name)
		}
		if other, dup := seen[name]; dup {
			t.Fatalf("labels %q and %q both named %q", other, k, name)
		}
		seen[name] = k
		if want := CleanValue(labels[k]); values[i] != want {
			t.Fatalf("label %q: value %q, want %q", k, values[i], want)
		}
		checkLabelValue(t, "label value", values[i])
	}
}

// FuzzNodeLabelPairs reads labels as "name=value" lines.
func FuzzNodeLabelPairs(f *testing.F) {
	f.Add("karpenter.sh/capacity-type=spot\nnode.kubernetes.io/instance-type=r6i.4xlarge\ntopology.kubernetes.io/zone=eu-west-1a")
	f.Add("a.b=1\na_b=2\na-b=3")
	f.Add("a.b=1\na_b=2\na_b_conflict1=3\nlabel_a_b=4")
	f.Add("fooBar=1\nfoo_bar=2\nfoo.bar=3\nfoo_bar_conflict2=4")
	f.Add("x=  padded  \ny=\xff")
	f.Add("A 0\nA B=0\nA b=0") // names that differ in case and white space only
	f.Add("=0\xb0\n0=\xff")
	f.Fuzz(func(t *testing.T, s string) {
		labels := map[string]string{}
		for _, line := range strings.Split(s, "\n") {
			k, v, _ := strings.Cut(line, "=")
			labels[k] = v
		}
		checkLabelPairs(t, labels)
	})
}
