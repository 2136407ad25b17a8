package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// rightsizingRow is what the shipped right-sizing rules say of one setting
// of one scenario's application after the scenarios.
type rightsizingRow struct {
	Scenario, Setting, Current, Need, AfterKills, Recommended string
}

const (
	settingMemory   = "spark.executor.memory"
	settingOverhead = "spark.executor.memoryOverhead"
	settingPython   = "spark.executor.pyspark.memory"
)

// killedSetting is the setting a scenario's end asks to raise: "none" for
// the machine's memory, "" for no end.
func killedSetting(r *scenarioResult) string {
	switch r.End.Kind {
	case endOOME:
		return settingMemory
	case endKilled:
		k := r.alert("ExecutorOOMKilled")
		if k == nil {
			return ""
		}
		// Spark's container is the heap plus the overhead: whichever
		// filled it, the overhead left too little.
		switch {
		case k.Labels["cause"] == "native" && k.Labels["region"] == "python":
			return settingPython
		case k.Labels["cause"] == "native" || k.Labels["cause"] == "heap":
			return settingOverhead
		case k.Labels["cause"] == "node":
			return "none"
		}
	}
	return ""
}

// scenarioRightSizing holds the right-sizing rules to each scenario's end:
// a native OOM kill raises memoryOverhead, an OutOfMemoryError or a heap
// kill spark.executor.memory, each by the bump at least over what was
// set; a node kill raises nothing and counts as node trouble; a healthy
// executor asks for nothing after kills. It returns every setting's
// figures for the report.
func scenarioRightSizing(t *testing.T, lab *scenarioLab, run []scenario, results []*scenarioResult) []rightsizingRow {
	t.Helper()
	const mib = 1 << 20
	value := func(expr string) (float64, bool) {
		res, err := lab.Prom.tryQuery(expr)
		if err != nil || len(res) != 1 {
			return 0, false
		}
		return sampleValue(t, res[0]), true
	}
	of := func(rule, app, setting string) string {
		return fmt.Sprintf(`app_name:executor_%s{app_name=%q, setting=%q}`, rule, app, setting)
	}
	// The group runs every minute and a kill's counter reads 0 first.
	for i, sc := range run {
		r := results[i]
		if r == nil {
			continue
		}
		app := "app-" + sc.Name
		switch s := killedSetting(r); s {
		case "":
		case "none":
			testenv.WaitFor(t, 3*time.Minute, sc.Name+": its node kill counted", func() bool {
				n, ok := value(of("kills:count", app, "none"))
				return ok && n > 0
			})
		default:
			testenv.WaitFor(t, 3*time.Minute, sc.Name+": what its kill asks of "+s, func() bool {
				_, ok := value(of("memory_after_kills:bytes", app, s))
				return ok
			})
		}
	}

	var rows []rightsizingRow
	for i, sc := range run {
		r := results[i]
		if r == nil {
			continue
		}
		app, killed := "app-"+sc.Name, killedSetting(r)
		for _, s := range []string{settingMemory, settingOverhead, settingPython} {
			need, ok := value(of("memory_need:bytes", app, s))
			if !ok {
				continue
			}
			row := rightsizingRow{Scenario: sc.Name, Setting: s, Current: "-", Need: fmt.Sprintf("%.0f", need/mib), AfterKills: "-"}
			current, hasCurrent := value(of("memory_setting:bytes", app, s))
			if hasCurrent {
				row.Current = fmt.Sprintf("%.0f", current/mib)
			}
			after, hasAfter := value(of("memory_after_kills:bytes", app, s))
			if hasAfter {
				row.AfterKills = fmt.Sprintf("%.0f", after/mib)
			}
			if rec, ok := value(of("memory_recommended:bytes", app, s)); ok {
				row.Recommended = fmt.Sprintf("%.0f", rec/mib)
			} else {
				row.Recommended = "-"
			}
			rows = append(rows, row)

			switch {
			case s == killed && !hasAfter:
				t.Errorf("%s ended with a kill of %s, but the right-sizing rules ask nothing of it", sc.Name, s)
			case s == killed && hasCurrent && after < max(current*1.2, current+256*mib):
				t.Errorf("%s: after its kill, %s %.0f MiB, want the %.0f MiB set raised by the bump at least", sc.Name, s, after/mib, current/mib)
			case s != killed && hasAfter:
				t.Errorf("%s ended as %q, but the right-sizing rules raise %s after kills (%.0f MiB)", sc.Name, endText(sc, r), s, after/mib)
			}
		}
	}
	return rows
}

func writeRightSizingReport(b *strings.Builder, rows []rightsizingRow) {
	b.WriteString(`
## What each application should set

What the shipped right-sizing rules (mixin/rightsizing.libsonnet,
docs/runbook.md#right-sizing) say of each scenario's application after it,
in MiB: the setting as it was (memoryOverhead: the limit less the heap),
what the peaks need, what the end asks for (a kill of the matching cause
raises the setting by the bump at least; a node kill raises nothing), and
the recommendation, which needs three executors of the application: only
node-overcommit runs that many.

| scenario | setting | set | peaks need | after kills | recommended |
|---|---|---|---|---|---|
`)
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Setting, r.Current, r.Need, r.AfterKills, r.Recommended)
	}
}
