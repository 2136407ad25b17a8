//go:build vmguest

package guest_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// recordSignals scrapes the exporter every second for c's container
// series, and reads the cgroup's memory.events every 250 ms for the
// kernel's first OOM kill, until that kill or until d passes: which of
// usage, memory.events and pressure moved first, and how long before the
// kill. Scraping starts once the cgroup is half full (read from its own
// files), so that the scrapes do not slow the other cases' JVMs while
// they start under emulation. It returns when done.
func recordSignals(c *vmreport.Case, d time.Duration) []vmreport.Signal {
	var out []vmreport.Signal
	start := time.Now()
	for time.Since(start) < d && oomKills(c.CgroupDir) == 0 {
		current, limit := readUint(c.CgroupDir, "memory.current"), readUint(c.CgroupDir, "memory.max")
		if limit > 0 && current >= limit/2 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	id := map[string]string{"pid": strconv.Itoa(c.PID)}
	with := func(k, v string) map[string]string {
		return map[string]string{"pid": id["pid"], k: v}
	}
	for tick := 0; time.Since(start) < d; tick++ {
		if oomKills(c.CgroupDir) > 0 {
			c.KillSeconds = time.Since(start).Seconds()
			return out
		}
		if tick%4 == 0 {
			at := time.Since(start).Seconds()
			if f, err := scrape(); err == nil {
				get := func(name string, want map[string]string) float64 {
					if v, ok := sample(f, name, want); ok {
						return v
					}
					return -1
				}
				out = append(out, vmreport.Signal{Seconds: at,
					Usage:        get("executor_container_memory_usage_bytes", id),
					Limit:        get("executor_container_memory_limit_bytes", id),
					EventsHigh:   get("executor_container_memory_events_total", with("event", "high")),
					EventsMax:    get("executor_container_memory_events_total", with("event", "max")),
					PressureSome: get("executor_container_memory_pressure_stall_seconds_total", with("kind", "some")),
					PressureFull: get("executor_container_memory_pressure_stall_seconds_total", with("kind", "full")),
				})
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return out
}

// readUint reads a cgroup file of one number; 0 for "max" or unreadable.
func readUint(dir, name string) uint64 {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v
}
