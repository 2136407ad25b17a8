package collector

import (
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

type hurries struct{ until []time.Time }

func (h *hurries) Hurry(until time.Time) { h.until = append(h.until, until) }

func TestPaceYARNFromTheTrackersView(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	far := jvm.JVM{Sample: jvm.Sample{Identity: jvm.Identity{PID: 1}, YARNContainer: "container_1_0001_01_000002"}}
	near := far
	near.PID, near.NearAllocation = 2, true
	for _, tc := range []struct {
		name  string
		view  []jvm.JVM
		gone  []jvm.Exit
		until time.Time // zero: no hurry
	}{
		{"nothing near", []jvm.JVM{far}, nil, time.Time{}},
		{"one near its allocation", []jvm.JVM{far, near}, nil, now.Add(yarnHurryFor)},
		{"an end outside YARN", nil, []jvm.Exit{{Last: jvm.Sample{Identity: jvm.Identity{PID: 3}}}}, time.Time{}},
		{"an end in a container", nil, []jvm.Exit{{Last: far.Sample}}, now.Add(exits.DefaultConfig.YARNWait)},
		{"both: the later", []jvm.JVM{near}, []jvm.Exit{{Last: far.Sample}}, now.Add(max(yarnHurryFor, exits.DefaultConfig.YARNWait))},
	} {
		h := &hurries{}
		paceYARN(h)(now, jvm.View{JVMs: tc.view, Time: now}, tc.gone)
		switch {
		case tc.until.IsZero() && len(h.until) > 0:
			t.Errorf("%s: hurried until %v", tc.name, h.until)
		case !tc.until.IsZero() && (len(h.until) != 1 || !h.until[0].Equal(tc.until)):
			t.Errorf("%s: hurried %v, want once until %v", tc.name, h.until, tc.until)
		}
	}
}
