// Command fleetsim serves the /metrics of a simulated fleet of Spark worker
// nodes, each as executor_exporter would expose it (internal/fleetsim), on
// one listener: node i at /nodes/<i>/metrics. It writes a file_sd file
// that points a Prometheus at every node with its instance and cluster
// labels. `make fleet` measures a real Prometheus scraping it.
package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/executor-exporter/executor_exporter/internal/fleetsim"
)

func main() {
	var (
		nodes    = kingpin.Flag("nodes", "Simulated nodes.").Default("20").Int()
		seed     = kingpin.Flag("seed", "Seed of the simulation: the same seed, the same fleet.").Default("1").Uint64()
		listen   = kingpin.Flag("web.listen-address", "Address to serve the nodes on.").Default("127.0.0.1:9499").String()
		template = kingpin.Flag("template", "A scrape of the real exporter the nodes are made from.").Default(filepath.Join("internal", "fleetsim", "testdata", "node.prom")).String()
		fileSD   = kingpin.Flag("file-sd", "Write a Prometheus file_sd file of the nodes here.").String()
		interval = kingpin.Flag("scrape-interval", "Prometheus's scrape interval.").Default("30s").Duration()
		lifetime = kingpin.Flag("mean-lifetime", "An executor's mean life.").Default("1h").Duration()
	)
	kingpin.Parse()
	if err := run(*nodes, *seed, *listen, *template, *fileSD, *interval, *lifetime); err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		os.Exit(1)
	}
}

func run(nodes int, seed uint64, listen, template, fileSD string, interval, lifetime time.Duration) error {
	f, err := os.Open(template)
	if err != nil {
		return err
	}
	tmpl, err := fleetsim.ParseTemplate(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", template, err)
	}
	fleet := fleetsim.New(fleetsim.Config{Nodes: nodes, Seed: seed, Interval: interval, MeanLifetime: lifetime}, tmpl)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if fileSD != "" {
		sd, err := fleet.FileSD(l.Addr().String())
		if err != nil {
			return err
		}
		if err := os.WriteFile(fileSD, sd, 0o644); err != nil {
			return err
		}
	}
	slog.Info("serving simulated nodes", "nodes", nodes, "address", l.Addr().String(), "first", "http://"+l.Addr().String()+fleetsim.MetricsPath(0))
	srv := &http.Server{Handler: fleet.Handler(time.Now), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(l)
}
