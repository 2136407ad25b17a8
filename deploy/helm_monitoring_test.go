package deploy

// How the chart and the kustomizations are scraped and what they give
// prometheus-operator and Grafana: selected by kube-prometheus-stack's
// default selectors, scraped once as job="executor_exporter", and the
// mixin's rules and dashboards as the mixin renders them.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// kubePrometheusStackSelectors are the selectors of the Prometheus that
// kube-prometheus-stack's chart renders with its default values for a
// release named kube-prometheus-stack: serviceMonitorSelector,
// podMonitorSelector and ruleSelector are each
// matchLabels {release: <its release name>} when left empty
// (…SelectorNilUsesHelmValues: true), and their namespace selectors are
// empty, every namespace (templates/prometheus/prometheus.yaml).
var kubePrometheusStackSelectors = map[string]map[string]string{
	"ServiceMonitor": {"release": "kube-prometheus-stack"},
	"PodMonitor":     {"release": "kube-prometheus-stack"},
	"PrometheusRule": {"release": "kube-prometheus-stack"},
}

// checkSelected fails unless kube-prometheus-stack's Prometheus selects
// the one object of each kind in ms.
func checkSelected(t *testing.T, where string, ms []manifest, kinds ...string) {
	t.Helper()
	for _, kind := range kinds {
		var o plainObject
		decodeLoose(t, ms, kind, &o)
		if !selects(kubePrometheusStackSelectors[kind], o.Metadata.Labels) {
			t.Errorf("%s: kube-prometheus-stack's %s selector %v does not select %s labelled %v", where, kind, kubePrometheusStackSelectors[kind], o.Metadata.Name, o.Metadata.Labels)
		}
	}
}

// decodeLoose decodes the one manifest of the kind into v, ignoring
// fields v lacks.
func decodeLoose(t *testing.T, ms []manifest, kind string, v interface{}) {
	t.Helper()
	m := onlyOf(t, ms, kind)
	if err := yaml.Unmarshal(m.raw, v); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
}

// TestKubePrometheusStackSelects: one value, monitoringLabels, labels the
// ServiceMonitor, the PodMonitor and the PrometheusRule alike, so that
// kube-prometheus-stack's default selectors take all three; without it
// they take none. The prometheus-operator kustomization is labelled for
// them too.
func TestKubePrometheusStackSelects(t *testing.T) {
	label := "monitoringLabels.release=kube-prometheus-stack"
	checkSelected(t, "chart with a ServiceMonitor",
		helmTemplate(t, label, "serviceMonitor.enabled=true", "prometheusRule.enabled=true"), "ServiceMonitor", "PrometheusRule")
	checkSelected(t, "chart with a PodMonitor",
		helmTemplate(t, label, "podMonitor.enabled=true", "prometheusRule.enabled=true"), "PodMonitor", "PrometheusRule")

	for _, kind := range []string{"ServiceMonitor", "PodMonitor"} {
		ms := helmTemplate(t, strings.ToLower(kind[:1])+kind[1:]+".enabled=true", "prometheusRule.enabled=true")
		for _, k := range []string{kind, "PrometheusRule"} {
			var o plainObject
			decodeLoose(t, ms, k, &o)
			if selects(kubePrometheusStackSelectors[k], o.Metadata.Labels) {
				t.Errorf("without monitoringLabels the chart's %s carries %v", k, o.Metadata.Labels)
			}
		}
	}

	// Each object's own additionalLabels go beside monitoringLabels.
	ms := helmTemplate(t, label, "serviceMonitor.enabled=true", "serviceMonitor.additionalLabels.team=spark",
		"prometheusRule.enabled=true", "prometheusRule.additionalLabels.rules=spark")
	var sm, rule plainObject
	decodeLoose(t, ms, "ServiceMonitor", &sm)
	decodeLoose(t, ms, "PrometheusRule", &rule)
	if sm.Metadata.Labels["team"] != "spark" || sm.Metadata.Labels["release"] != "kube-prometheus-stack" || sm.Metadata.Labels["rules"] != "" {
		t.Errorf("ServiceMonitor labels %v, want release and team", sm.Metadata.Labels)
	}
	if rule.Metadata.Labels["rules"] != "spark" || rule.Metadata.Labels["release"] != "kube-prometheus-stack" || rule.Metadata.Labels["team"] != "" {
		t.Errorf("PrometheusRule labels %v, want release and rules", rule.Metadata.Labels)
	}

	checkSelected(t, "deploy/kubernetes/prometheus-operator",
		parseManifests(t, kustomize(t, "deploy/kubernetes/prometheus-operator")), "ServiceMonitor", "PrometheusRule")
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "kubernetes", "prometheus-operator", "podmonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkSelected(t, "prometheus-operator/podmonitor.yaml", parseManifests(t, raw), "PodMonitor")
}

// TestScrapedOnce: no default scrapes an exporter twice, and every scrape
// the chart and the kustomizations set up labels it job="executor_exporter",
// which the mixin's rules select.
func TestScrapedOnce(t *testing.T) {
	for name, ms := range map[string][]manifest{
		"chart":               helmTemplate(t),
		"chart, monitors":     helmTemplate(t, "serviceMonitor.enabled=true", "prometheusRule.enabled=true"),
		"deploy/kubernetes":   parseManifests(t, kustomize(t, "deploy/kubernetes")),
		"prometheus-operator": parseManifests(t, kustomize(t, "deploy/kubernetes/prometheus-operator")),
	} {
		var ds daemonSet
		decodeStrict(t, ms, "DaemonSet", &ds)
		for k := range ds.Spec.Template.Metadata.Annotations {
			if strings.HasPrefix(k, "prometheus.io/") {
				t.Errorf("%s: pod annotation %s: an annotation-based scrape beside the monitors, named after its scrape configuration", name, k)
			}
		}
		if n := countKind(ms, "ServiceMonitor") + countKind(ms, "PodMonitor"); n > 1 {
			t.Errorf("%s renders %d monitors of the same pods", name, n)
		}
	}

	// The annotations, when asked for, with the chart's port and scheme.
	var ds daemonSet
	decodeStrict(t, helmTemplate(t, "scrapeAnnotations=true", "port=9500"), "DaemonSet", &ds)
	if a := ds.Spec.Template.Metadata.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9500" {
		t.Errorf("scrapeAnnotations=true: annotations %v", a)
	}

	// Two scrapes of the same pods are refused with a reason.
	for _, values := range [][]string{
		{"serviceMonitor.enabled=true", "podMonitor.enabled=true"},
		{"serviceMonitor.enabled=true", "scrapeAnnotations=true"},
		{"podMonitor.enabled=true", "scrapeAnnotations=true"},
	} {
		if msg := helmTemplateFails(t, values...); !strings.Contains(msg, "twice") && !strings.Contains(msg, "one of them") {
			t.Errorf("%v: helm template fails with %q, want the reason", values, msg)
		}
	}
}

func countKind(ms []manifest, kind string) int {
	n := 0
	for _, m := range ms {
		if m.Kind == kind {
			n++
		}
	}
	return n
}

// TestHelmPodMonitor: the PodMonitor selects the chart's pods and scrapes
// as the ServiceMonitor does, with the values it is given.
func TestHelmPodMonitor(t *testing.T) {
	ms := helmTemplate(t, "podMonitor.enabled=true", "podMonitor.interval=15s", "podMonitor.scrapeTimeout=5s",
		"podMonitor.namespace=monitoring", "podMonitor.additionalLabels.team=spark",
		"podMonitor.relabelings[0].action=labeldrop", "podMonitor.relabelings[0].regex=service",
		"podMonitor.metricRelabelings[0].action=drop", "podMonitor.metricRelabelings[0].sourceLabels[0]=__name__",
		"podMonitor.metricRelabelings[0].regex=go_.*")
	var pm serviceMonitor
	decodeStrict(t, ms, "PodMonitor", &pm)
	var ds daemonSet
	decodeStrict(t, ms, "DaemonSet", &ds)
	checkMonitor(t, "PodMonitor", pm, ds.Spec.Template.Metadata.Labels, ds.Metadata.Namespace, pm.Spec.PodMetricsEndpoints)
	if pm.Metadata.Namespace != "monitoring" || pm.Metadata.Labels["team"] != "spark" {
		t.Errorf("PodMonitor in %q labelled %v, want namespace monitoring and team=spark", pm.Metadata.Namespace, pm.Metadata.Labels)
	}
	ep := pm.Spec.PodMetricsEndpoints[0]
	if ep.Interval != "15s" || ep.ScrapeTimeout != "5s" || ep.Scheme != "http" {
		t.Errorf("PodMonitor endpoint %+v, want interval 15s, scrapeTimeout 5s, scheme http", ep)
	}
	// The chart's relabelings first, the user's after.
	if n := len(ep.Relabelings); n != 4 || ep.Relabelings[n-1].Regex != "service" {
		t.Errorf("relabelings %+v: want the chart's three, then the given one", ep.Relabelings)
	}
	if len(ep.MetricRelabelings) != 1 || ep.MetricRelabelings[0].Regex != "go_.*" {
		t.Errorf("metricRelabelings %+v", ep.MetricRelabelings)
	}

	// Over TLS with basic auth, as the ServiceMonitor.
	ms = helmTemplate(t, append(webConfigValues[:3:3], "serviceMonitor.enabled=false", "podMonitor.enabled=true",
		"podMonitor.tlsConfig.insecureSkipVerify=true",
		"podMonitor.basicAuth.username.name=scrape", "podMonitor.basicAuth.username.key=user")...)
	var tlsPM serviceMonitor
	decodeStrict(t, ms, "PodMonitor", &tlsPM)
	ep = tlsPM.Spec.PodMetricsEndpoints[0]
	if ep.Scheme != "https" || ep.TLSConfig["insecureSkipVerify"] != true || ep.BasicAuth["username"] == nil {
		t.Errorf("PodMonitor endpoint with TLS and basic auth: %+v", ep)
	}

	// The PodMonitor scrapes the pods, not the Service: it works without.
	ms = helmTemplate(t, "podMonitor.enabled=true", "service.enabled=false")
	if countKind(ms, "Service") != 0 || countKind(ms, "PodMonitor") != 1 {
		t.Error("service.enabled=false with podMonitor.enabled=true: want a PodMonitor and no Service")
	}
}

// TestHelmExtraVolumes: extraVolumes and extraVolumeMounts reach the pod
// and the container, after the chart's own.
func TestHelmExtraVolumes(t *testing.T) {
	var ds daemonSet
	decodeStrict(t, helmTemplate(t, "extraVolumes[0].name=ca", "extraVolumes[0].configMap.name=my-ca",
		"extraVolumeMounts[0].name=ca", "extraVolumeMounts[0].mountPath=/etc/executor-exporter/ca",
		"extraVolumeMounts[0].readOnly=true"), "DaemonSet", &ds)
	pod := ds.Spec.Template.Spec
	vols := pod.Volumes
	if last := vols[len(vols)-1]; last.Name != "ca" || last.ConfigMap == nil || last.ConfigMap.Name != "my-ca" {
		t.Errorf("volumes %+v: want configMap my-ca as ca last", vols)
	}
	mounts := pod.Containers[0].VolumeMounts
	if last := mounts[len(mounts)-1]; last.Name != "ca" || last.MountPath != "/etc/executor-exporter/ca" || !last.ReadOnly {
		t.Errorf("volumeMounts %+v: want ca at /etc/executor-exporter/ca, read-only, last", mounts)
	}
	var def daemonSet
	decodeStrict(t, helmTemplate(t), "DaemonSet", &def)
	if len(def.Spec.Template.Spec.Volumes) != len(vols)-1 {
		t.Errorf("the defaults have %d volumes, with one extra %d", len(def.Spec.Template.Spec.Volumes), len(vols))
	}
}

// TestHelmPriorityClass: no priority class by default, in the chart and
// the kustomize base alike (GKE admits system-node-critical outside
// kube-system only with a ResourceQuota); the value sets it.
func TestHelmPriorityClass(t *testing.T) {
	for name, ms := range map[string][]manifest{
		"chart":             helmTemplate(t),
		"deploy/kubernetes": parseManifests(t, kustomize(t, "deploy/kubernetes")),
	} {
		var ds daemonSet
		decodeStrict(t, ms, "DaemonSet", &ds)
		if pc := ds.Spec.Template.Spec.PriorityClassName; pc != "" {
			t.Errorf("%s: priorityClassName %q by default", name, pc)
		}
	}
	var ds daemonSet
	decodeStrict(t, helmTemplate(t, "priorityClassName=system-node-critical"), "DaemonSet", &ds)
	if pc := ds.Spec.Template.Spec.PriorityClassName; pc != "system-node-critical" {
		t.Errorf("priorityClassName=system-node-critical renders %q", pc)
	}
}

// alertNames lists the alerts of rule groups, and whether any recording
// rule is among them.
func alertNames(groups []ruleGroup) (alerts []string, records int) {
	for _, g := range groups {
		for _, r := range g.Rules {
			if a, ok := r["alert"].(string); ok {
				alerts = append(alerts, a)
			} else {
				records++
			}
		}
	}
	return alerts, records
}

// TestHelmPrometheusRuleValues: prometheusRule.disabled leaves out the
// alerts it names, and refuses a name the mixin lacks;
// additionalRuleLabels labels every alert and no recording rule.
func TestHelmPrometheusRuleValues(t *testing.T) {
	var all prometheusRule
	decodeStrict(t, helmTemplate(t, prometheusRuleValues...), "PrometheusRule", &all)
	allAlerts, allRecords := alertNames(all.Spec.Groups)
	if len(allAlerts) < 2 || allRecords == 0 {
		t.Fatalf("the PrometheusRule has %d alerts and %d recording rules", len(allAlerts), allRecords)
	}

	off := []string{"ExecutorNodeMemoryOvercommitted", "ExecutorOOMKilled"}
	var rule prometheusRule
	decodeStrict(t, helmTemplate(t, "prometheusRule.enabled=true",
		"prometheusRule.disabled."+off[0]+"=true", "prometheusRule.disabled."+off[1]+"=true"), "PrometheusRule", &rule)

	alerts, records := alertNames(rule.Spec.Groups)
	for _, a := range off {
		if !slices.Contains(allAlerts, a) {
			t.Fatalf("the mixin has no alert %s: pick another for this test", a)
		}
		if slices.Contains(alerts, a) {
			t.Errorf("prometheusRule.disabled.%s=true: the alert is still there", a)
		}
	}
	if len(alerts) != len(allAlerts)-len(off) || records != allRecords {
		t.Errorf("with 2 alerts off: %d alerts and %d recording rules, want %d and %d", len(alerts), records, len(allAlerts)-2, allRecords)
	}
	for _, g := range rule.Spec.Groups {
		if len(g.Rules) == 0 {
			t.Errorf("group %s left empty", g.Name)
		}
	}
	// false keeps the alert.
	var kept prometheusRule
	decodeStrict(t, helmTemplate(t, "prometheusRule.enabled=true", "prometheusRule.disabled."+off[0]+"=false"), "PrometheusRule", &kept)
	if alerts, _ := alertNames(kept.Spec.Groups); !slices.Contains(alerts, off[0]) {
		t.Errorf("prometheusRule.disabled.%s=false drops the alert", off[0])
	}
	if msg := helmTemplateFails(t, "prometheusRule.enabled=true", "prometheusRule.disabled.ExecutorNoSuchAlert=true"); !strings.Contains(msg, "ExecutorNoSuchAlert") {
		t.Errorf("a disabled name that is no alert: helm template fails with %q, want the name", msg)
	}

	var labelled prometheusRule
	decodeStrict(t, helmTemplate(t, "prometheusRule.enabled=true", "prometheusRule.additionalRuleLabels.team=spark-platform"), "PrometheusRule", &labelled)
	for _, g := range labelled.Spec.Groups {
		for _, r := range g.Rules {
			labels, _ := r["labels"].(map[interface{}]interface{})
			if _, isAlert := r["alert"]; isAlert {
				if labels["team"] != "spark-platform" || labels["severity"] == nil {
					t.Errorf("alert %v: labels %v, want team=spark-platform beside its severity", r["alert"], labels)
				}
			} else if labels["team"] != nil {
				t.Errorf("recording rule %v labelled team: its series and the joins that read them would change", r["record"])
			}
		}
	}
}

// TestHelmDashboards: one ConfigMap per dashboard of dashboards/, holding
// it byte for byte (files/dashboards links there, and the mixin's make
// check keeps dashboards/ what the mixin renders), labelled for Grafana's
// sidecar.
func TestHelmDashboards(t *testing.T) {
	root := testenv.RepoRoot()
	link := filepath.Join(root, chartDir, "files", "dashboards")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatalf("%s must be a symbolic link to dashboards/: %v", link, err)
	}
	if resolved := filepath.Clean(filepath.Join(filepath.Dir(link), target)); resolved != filepath.Join(root, "dashboards") {
		t.Errorf("%s links to %s, want dashboards/", link, resolved)
	}
	want := map[string]string{}
	files, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in dashboards/: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want[filepath.Base(f)] = string(raw)
	}

	if ms := helmTemplate(t); countKind(ms, "ConfigMap") != 0 {
		t.Error("the defaults render dashboard ConfigMaps")
	}
	ms := helmTemplate(t, "dashboards.enabled=true", "dashboards.annotations.grafana_folder=Spark")
	checkDashboards(t, ms, want, "grafana_dashboard", "1", "Spark")
	ms = helmTemplate(t, "dashboards.enabled=true", "dashboards.label=my_dashboards", "dashboards.labelValue=spark",
		"dashboards.namespace=monitoring")
	checkDashboards(t, ms, want, "my_dashboards", "spark", "")
	for _, m := range ms {
		if m.Kind == "ConfigMap" && m.Metadata.Namespace != "monitoring" {
			t.Errorf("dashboards.namespace=monitoring: ConfigMap %s in %q", m.Metadata.Name, m.Metadata.Namespace)
		}
	}
}

func checkDashboards(t *testing.T, ms []manifest, want map[string]string, label, value, folder string) {
	t.Helper()
	got := map[string]string{}
	for _, m := range ms {
		if m.Kind != "ConfigMap" {
			continue
		}
		var cm configMap
		if err := yaml.UnmarshalStrict(m.raw, &cm); err != nil {
			t.Fatalf("ConfigMap %s: %v", m.Metadata.Name, err)
		}
		if cm.Metadata.Labels[label] != value {
			t.Errorf("ConfigMap %s labels %v, want %s=%q", cm.Metadata.Name, cm.Metadata.Labels, label, value)
		}
		if cm.Metadata.Annotations["grafana_folder"] != folder {
			t.Errorf("ConfigMap %s annotations %v, want grafana_folder %q", cm.Metadata.Name, cm.Metadata.Annotations, folder)
		}
		if len(cm.Data) != 1 {
			t.Errorf("ConfigMap %s holds %d files, want one dashboard", cm.Metadata.Name, len(cm.Data))
		}
		for k, v := range cm.Data {
			got[k] = v
		}
	}
	if len(got) != len(want) {
		t.Errorf("the ConfigMaps hold %d dashboards, dashboards/ has %d", len(got), len(want))
	}
	for name, body := range want {
		if got[name] != body {
			t.Errorf("the ConfigMap's %s differs from dashboards/%s", name, name)
		}
	}
}
