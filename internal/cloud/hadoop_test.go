package cloud

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

func TestParseEMR(t *testing.T) {
	for dir, want := range map[string]string{
		"task-group": "emr/j-2AXXXXXXGAPLF/task/ig-2EXAMPLETASK",
		"core-fleet": "emr/j-3BYYYYYYHBQMG/core/if-1EXAMPLECORE",
		"master":     "emr//master/ig-1OLDMASTER", // no job-flow.json: the cluster part is empty
		// instance.json without instanceRole: extraInstanceData.json's.
		"core-extra": "emr/j-1CZZZZZZKDRNH/core/ig-3EXAMPLECORE",
	} {
		pool, ok, err := readEMR(filepath.Join("testdata", "emr", dir))
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v", dir, ok, err)
		}
		if pool != want {
			t.Errorf("%s: node pool %q, want %q", dir, pool, want)
		}
	}
	if _, ok, err := readEMR(t.TempDir()); ok || err != nil {
		t.Errorf("no instance.json: %v, %v; want not EMR", ok, err)
	}
	for name, in := range map[string]string{
		"no role":   `{"isMaster":false,"instanceGroupId":"ig-1"}`,
		"truncated": `{"instanceRole":"Core"`,
		"wrong":     `{"instanceRole":7}`,
	} {
		if _, err := ParseEMR([]byte(in), nil, []byte(`{"jobFlowId":"j-1"}`)); err == nil {
			t.Errorf("%s, extraInstanceData.json without a role: no error", name)
		}
		if _, err := ParseEMR([]byte(in), nil, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "instance.json"), []byte(`{"instanceRole":"Core","instanceGroupId":"`+strings.Repeat("x", maxEMRFileBytes)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readEMR(dir); err == nil {
		t.Error("oversized instance.json: no error")
	}
}

func TestDataprocPool(t *testing.T) {
	for _, tc := range []struct{ role, cluster, name, want string }{
		{"Master", "cluster-1", "cluster-1-m", "dataproc/cluster-1/master"},
		{"Worker", "cluster-1", "cluster-1-w-0", "dataproc/cluster-1/worker"},
		{"Worker", "cluster-1", "cluster-1-sw-x9k2", "dataproc/cluster-1/secondary-worker"},
		// A primary worker of a cluster whose name ends in -sw is not
		// secondary.
		{"Worker", "etl-sw", "etl-sw-w-1", "dataproc/etl-sw/worker"},
		{"Worker", "a/b", "a/b-w-1", "dataproc/a_b/worker"},
	} {
		if got := DataprocPool(tc.role, tc.cluster, tc.name); got != tc.want {
			t.Errorf("DataprocPool(%q, %q, %q) = %q, want %q", tc.role, tc.cluster, tc.name, got, tc.want)
		}
	}
}

func TestCloudRefreshHadoopNodePools(t *testing.T) {
	t.Run("dataproc", func(t *testing.T) {
		gcp := cloudtest.NewGCP(t)
		cloudtest.SetDataproc(gcp, "cluster-1", "Worker", "cluster-1-sw-x9k2")
		r := newTestRefresher(t, testConfig(cloudtest.SysfsWithDMI(t, gcpDMI), gcp.URL))
		if err := r.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := r.Snapshot().Instance; got.NodePool != "dataproc/cluster-1/secondary-worker" || got.Platform != PlatformDataproc || got.Lifecycle != LifecycleSpot {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("gce without dataproc", func(t *testing.T) {
		gcp := cloudtest.NewGCP(t)
		r := newTestRefresher(t, testConfig(cloudtest.SysfsWithDMI(t, gcpDMI), gcp.URL))
		if err := r.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := r.Snapshot().Instance; got.NodePool != "" || got.Platform != "vm" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("emr", func(t *testing.T) {
		aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
		cfg := testConfig(cloudtest.SysfsWithDMI(t, awsNitroDMI), aws.URL)
		cfg.EMRInfoDir = filepath.Join("testdata", "emr", "task-group")
		r := newTestRefresher(t, cfg)
		if err := r.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := r.Snapshot().Instance; got.NodePool != "emr/j-2AXXXXXXGAPLF/task/ig-2EXAMPLETASK" || got.Platform != PlatformEMR || got.InstanceType != "m5.xlarge" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("emr files broken", func(t *testing.T) {
		aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
		cfg := testConfig(cloudtest.SysfsWithDMI(t, awsNitroDMI), aws.URL)
		cfg.EMRInfoDir = t.TempDir()
		if err := os.WriteFile(filepath.Join(cfg.EMRInfoDir, "instance.json"), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := newTestRefresher(t, cfg)
		if err := r.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "EMR") {
			t.Fatalf("error %v", err)
		}
		// The metadata service's facts stand.
		if got := r.Snapshot().Instance; got.InstanceType != "m5.xlarge" || got.NodePool != "" {
			t.Fatalf("got %+v", got)
		}
	})
}

func FuzzParseEMR(f *testing.F) {
	for _, dir := range []string{"task-group", "core-fleet", "master", "core-extra"} {
		inst, _ := os.ReadFile(filepath.Join("testdata", "emr", dir, "instance.json"))
		flow, _ := os.ReadFile(filepath.Join("testdata", "emr", dir, "job-flow.json"))
		extra, _ := os.ReadFile(filepath.Join("testdata", "emr", dir, "extraInstanceData.json"))
		f.Add(inst, flow, extra)
	}
	f.Fuzz(func(t *testing.T, inst, flow, extra []byte) {
		pool, err := ParseEMR(inst, flow, extra)
		if err != nil {
			return
		}
		if !strings.HasPrefix(pool, "emr/") || strings.Count(pool, "/") > 3 {
			t.Fatalf("node pool %q", pool)
		}
		checkLabelValue(t, "node pool", CleanValue(pool))
	})
}
