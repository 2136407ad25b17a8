// Command executor_exporter exports the memory of every JVM on a machine,
// the machine's own memory and cloud identity, and the OOM kills that hit
// Spark executors, for Prometheus.
package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	slgk "github.com/tjhop/slog-gokit"

	"github.com/executor-exporter/executor_exporter/collector"
)

const (
	exporterName = "executor_exporter"
	// defaultListenAddress is the port reserved for this exporter on the
	// Prometheus default port allocations page's free range.
	defaultListenAddress = ":9482"
)

func main() {
	var (
		metricsPath = kingpin.Flag("web.telemetry-path", "Path under which to expose metrics.").
				Default("/metrics").String()
		maxRequests = kingpin.Flag("web.max-requests", "Maximum number of parallel scrape requests. Use 0 to disable.").
				Default("40").Int()
		disableExporterMetrics = kingpin.Flag("web.disable-exporter-metrics", "Exclude metrics about the exporter itself (promhttp_*, process_*, go_*).").
					Bool()
		// One CPU, as node_exporter: the exporter's work is a few short
		// bursts a second at most, and with more Ps the runtime spends
		// more waking, spinning and stealing than the work needs
		// (docs/performance.md#decisions).
		maxProcs = kingpin.Flag("runtime.gomaxprocs", "The target number of CPUs Go will run on (GOMAXPROCS).").
				Envar("GOMAXPROCS").Default("1").Int()
		toolkitFlags = kingpinflag.AddFlags(kingpin.CommandLine, defaultListenAddress)
		logConfig    = addLogFlags(kingpin.CommandLine)
	)
	kingpin.Version(version.Print(exporterName))
	kingpin.CommandLine.UsageWriter(os.Stdout)
	kingpin.HelpFlag.Short('h')
	kingpin.Parse()

	logger, slogger, err := logConfig.build(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	level.Info(logger).Log("msg", "Starting "+exporterName, "version", version.Info())
	runtime.GOMAXPROCS(*maxProcs)
	level.Debug(logger).Log("msg", "Go MAXPROCS", "procs", runtime.GOMAXPROCS(0))
	level.Info(logger).Log("msg", "Build context", "build_context", version.BuildContext())

	ec, err := collector.NewExecutorCollector(logger,
		collector.NewDependencies(logger, collector.JVMTrackerConfigFromFlags()))
	if err != nil {
		level.Error(logger).Log("msg", "Couldn't create collectors", "err", err)
		os.Exit(1)
	}
	for _, name := range collector.Names() {
		_, enabled := ec.Collectors[name]
		level.Info(logger).Log("msg", "collector", "name", name, "enabled", enabled)
	}

	metrics := newHandler(ec, logger, *maxRequests, !*disableExporterMetrics)
	http.Handle(*metricsPath, metrics)
	handleStatusPage(http.DefaultServeMux, ec, *metricsPath)

	server := &http.Server{ReadHeaderTimeout: readHeaderTimeout}
	if err := serve(server, toolkitFlags, slogger, logger, ec.Stop); err != nil {
		level.Error(logger).Log("err", err)
		os.Exit(1)
	}
}

// newHandler serves the collectors' metrics and the build info, with the
// exporter's own Go and process metrics from a registry of their own, so
// a failing collector never hides the exporter's health and vice versa.
func newHandler(ec *collector.ExecutorCollector, logger log.Logger, maxRequests int, exporterMetrics bool) http.Handler {
	registry := prometheus.NewRegistry()
	registry.MustRegister(versioncollector.NewCollector("executor_exporter"))
	gatherers := prometheus.Gatherers{registry}
	var instrumented prometheus.Registerer = prometheus.NewRegistry()
	if exporterMetrics {
		self := prometheus.NewRegistry()
		self.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
		gatherers = append(gatherers, self)
		instrumented = self
	}
	opts := promhttp.HandlerOpts{
		ErrorLog:            stdLogger{logger},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxRequests,
		Registry:            instrumented,
		// Prometheus asks for OpenMetrics first; serving it lets a scraper
		// that wants it have it (text stays the answer to everyone else).
		EnableOpenMetrics: true,
	}
	handler := ec.Handler(gatherers, opts)
	if exporterMetrics {
		handler = promhttp.InstrumentMetricHandler(instrumented, handler)
	}
	return handler
}

// stdLogger adapts go-kit's logger to promhttp's Println-style ErrorLog.
type stdLogger struct{ logger log.Logger }

func (l stdLogger) Println(v ...interface{}) {
	level.Error(l.logger).Log("msg", fmt.Sprint(v...))
}

// slogFromGoKit hands exporter-toolkit a *slog.Logger that writes through
// the same go-kit logger as everything else.
func slogFromGoKit(logger log.Logger, lvl slog.Leveler) *slog.Logger {
	return slog.New(slgk.NewGoKitHandler(logger, lvl))
}
