package cloud

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var (
	invalidLabelChar = regexp.MustCompile(`[^a-zA-Z0-9_]`)
	lowerThenUpper   = regexp.MustCompile(`([a-z0-9])([A-Z])`)
)

// NodeLabelName turns a Kubernetes label name into a Prometheus one the way
// kube-state-metrics does for kube_node_labels, so that joins and
// dashboards written for one work for the other:
// "eks.amazonaws.com/capacityType" → "label_eks_amazonaws_com_capacity_type".
func NodeLabelName(name string) string {
	sanitized := invalidLabelChar.ReplaceAllString(name, "_")
	return "label_" + strings.ToLower(lowerThenUpper.ReplaceAllString(sanitized, "${1}_${2}"))
}

// NodeLabelPairs returns Prometheus label names and values for labels,
// sorted by Kubernetes name. Names that collide once sanitised ("a.b" and
// "a_b") are all suffixed _conflict1, _conflict2, … in that order, as
// kube-state-metrics does, so no value is silently dropped.
func NodeLabelPairs(labels map[string]string) (names, values []string) {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	count := map[string]int{}
	for _, k := range keys {
		count[NodeLabelName(k)]++
	}
	seen := map[string]int{}
	taken := map[string]bool{}
	for _, k := range keys {
		name := NodeLabelName(k)
		if count[name] > 1 {
			seen[name]++
			name = fmt.Sprintf("%s_conflict%d", name, seen[name])
		}
		// A generated name can itself equal another key's sanitised
		// name; Prometheus rejects a label name given twice.
		for taken[name] {
			name += "_"
		}
		taken[name] = true
		names = append(names, name)
		values = append(values, CleanValue(labels[k]))
	}
	return names, values
}
