package collector

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
)

// fixedCollector emits one gauge and returns err.
type fixedCollector struct {
	desc *prometheus.Desc
	err  error
}

func (c fixedCollector) Update(ch chan<- prometheus.Metric) error {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
	return c.err
}

func TestExecutorCollectorReportsEachCollector(t *testing.T) {
	newFixed := func(name string, err error) Collector {
		return fixedCollector{desc: prometheus.NewDesc("test_"+name, "test", nil, nil), err: err}
	}
	ec := NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{
		"ok":     newFixed("ok", nil),
		"nodata": newFixed("nodata", fmt.Errorf("no PSI here: %w", ErrNoData)),
		"broken": newFixed("broken", errors.New("corrupt file")),
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(ec)

	// Concurrent scrapes, as Prometheus HA pairs and humans with curl make.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	success := map[string]float64{}
	durations := 0
	samples := map[string]bool{}
	for _, mf := range families {
		samples[mf.GetName()] = true
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "executor_scrape_collector_success":
				success[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			case "executor_scrape_collector_duration_seconds":
				durations++
			}
		}
	}
	want := map[string]float64{"ok": 1, "nodata": 1, "broken": 0}
	for name, v := range want {
		if got, ok := success[name]; !ok || got != v {
			t.Errorf("success{collector=%q} = %v (present %v), want %v", name, got, ok, v)
		}
	}
	if durations != 3 {
		t.Errorf("%d duration series, want 3", durations)
	}
	// A failing collector's metrics still go out: it decides what to send.
	for _, name := range []string{"test_ok", "test_nodata", "test_broken"} {
		if !samples[name] {
			t.Errorf("%s missing", name)
		}
	}
}

func TestRegisteredCollectorsHaveFlags(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no collectors registered")
	}
	for _, name := range names {
		if collectorEnabled[name] == nil {
			t.Errorf("collector %s has no --collector.%s flag", name, name)
		}
	}
}
