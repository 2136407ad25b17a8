package fleetsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// MetricsPath is where node i's scrape is served.
func MetricsPath(i int) string { return fmt.Sprintf("/nodes/%d/metrics", i) }

// Handler serves every node's scrape, on one listener: GET
// /nodes/<i>/metrics answers what node i exposes now.
func (f *Fleet) Handler(now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /nodes/{node}/metrics", func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.PathValue("node"))
		if err != nil || i < 0 || i >= len(f.nodes) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = f.WriteText(w, f.nodes[i], now())
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, "%d simulated nodes; node i at %s\n", len(f.nodes), MetricsPath(0)) // a client gone is nothing to act on
	})
	return mux
}

// FileSD is a Prometheus file_sd_configs file that scrapes every node at
// addr (the Handler's listener): one target per node, with the node's
// instance label, its cluster and its path.
func (f *Fleet) FileSD(addr string) ([]byte, error) { return FileSD(addr, f.nodes) }

// FileSD is the file_sd file of some of the nodes, e.g. one cluster's.
func FileSD(addr string, nodes []*Node) ([]byte, error) {
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	groups := make([]group, 0, len(nodes))
	for _, n := range nodes {
		groups = append(groups, group{
			Targets: []string{addr},
			Labels: map[string]string{
				"__metrics_path__": MetricsPath(n.Index),
				"instance":         n.Instance,
				"cluster":          n.Cluster,
			},
		})
	}
	return json.MarshalIndent(groups, "", "  ")
}

// ClusterNodes returns the nodes of one cluster.
func (f *Fleet) ClusterNodes(cluster string) []*Node {
	var out []*Node
	for _, n := range f.nodes {
		if n.Cluster == cluster {
			out = append(out, n)
		}
	}
	return out
}
