//go:build vmguest

package guest_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// The exporter every case scrapes, and one with the default sampling
// flags for the fast leak (fastLeakCase).
const (
	exporterAddr        = "127.0.0.1:9482"
	defaultExporterAddr = "127.0.0.1:9483"
)

// startExporter runs the built exporter on the VM's own /proc, /sys and
// /dev/kmsg (its defaults) at addr, logging into the output directory.
func startExporter(g *guest, addr, logName string, args ...string) error {
	log, err := os.Create(filepath.Join(g.out, logName))
	if err != nil {
		return err
	}
	cmd := exec.Command(g.exporter, append([]string{"--web.listen-address=" + addr}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	g.cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		log.Close()
	})
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := getFrom(addr, "/metrics"); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the exporter did not answer on %s within a minute", addr)
}

// One scrape at a time: every case polls the exporter, and under
// emulation each scrape costs the VM's CPUs what the JVMs need.
var scrapeMu sync.Mutex

func scrapeText() (string, error) {
	scrapeMu.Lock()
	defer scrapeMu.Unlock()
	return get("/metrics")
}

func get(path string) (string, error) { return getFrom(exporterAddr, path) }

func getFrom(addr, path string) (string, error) {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), nil
}

func scrape() (map[string]*dto.MetricFamily, error) {
	text, err := scrapeText()
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// sample returns the value of the first sample of name whose labels
// include want.
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		}
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// waitFor polls cond until it holds or d passes, and records the wait in
// the case: the host judges what came, the guest only waits for it.
func waitFor(c *vmreport.Case, what string, d time.Duration, cond func() bool) bool {
	start := time.Now()
	ok := false
	for {
		if ok = cond(); ok || time.Since(start) > d {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.Waits = append(c.Waits, vmreport.Wait{What: what, OK: ok, Seconds: time.Since(start).Seconds()})
	return ok
}

// waitSample waits until a series of name with labels want reads at
// least min.
func waitSample(c *vmreport.Case, name string, want map[string]string, min float64, d time.Duration) bool {
	what := fmt.Sprintf("%s%v >= %v", name, want, min)
	return waitFor(c, what, d, func() bool {
		f, err := scrape()
		if err != nil {
			return false
		}
		v, ok := sample(f, name, want)
		return ok && v >= min
	})
}
