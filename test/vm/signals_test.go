package vm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// checkSignals: the container series moved before the kernel's OOM kill,
// as the exporter's scrapes showed them every second; it logs when each
// first rose against when usage crossed 90 % of the limit, the evidence
// for alerting on them (docs/testing-kernels.md#early-signals-before-a-kill).
func checkSignals(t *testing.T, r guestRun, name string) {
	c := caseOf(t, r, name)
	if c.KillSeconds == 0 || len(c.Signals) < 2 {
		t.Fatalf("%d scrapes and no kill seen (kill at %.2fs)", len(c.Signals), c.KillSeconds)
	}
	first := c.Signals[0]
	for what, v := range map[string]float64{"usage": first.Usage, "limit": first.Limit, "events max": first.EventsMax,
		"events high": first.EventsHigh, "pressure some": first.PressureSome, "pressure full": first.PressureFull} {
		if v < 0 {
			t.Errorf("the first scrape had no %s series of the JVM", what)
		}
	}
	l := leads(c)
	var b strings.Builder
	for _, k := range []string{"usage ≥ 90%", "events max", "events high", "pressure some", "pressure full"} {
		if at, ok := l[k]; ok {
			fmt.Fprintf(&b, "  %-14s rose %5.1fs before the kill\n", k, c.KillSeconds-at)
		} else {
			fmt.Fprintf(&b, "  %-14s did not rise before the kill\n", k)
		}
	}
	t.Logf("%s: %d scrapes over %.1fs, kill seen at %.2fs:\n%s", name, len(c.Signals), c.KillSeconds, c.KillSeconds, b.String())
	if _, ok := l["usage ≥ 90%"]; !ok {
		t.Errorf("no scrape saw usage at 90 %% of the limit before the kill")
	}
}

// leads says when each signal first rose: usage at 90 % of the limit, and
// each counter above its first scrape's value; seconds on the
// recording's clock.
func leads(c *vmreport.Case) map[string]float64 {
	first := c.Signals[0]
	out := map[string]float64{}
	mark := func(k string, rose bool, at float64) {
		if _, seen := out[k]; rose && !seen {
			out[k] = at
		}
	}
	for _, s := range c.Signals {
		mark("usage ≥ 90%", s.Limit > 0 && s.Usage >= 0.9*s.Limit, s.Seconds)
		mark("events max", s.EventsMax > first.EventsMax, s.Seconds)
		mark("events high", s.EventsHigh > first.EventsHigh, s.Seconds)
		mark("pressure some", s.PressureSome > first.PressureSome, s.Seconds)
		mark("pressure full", s.PressureFull > first.PressureFull, s.Seconds)
	}
	return out
}
