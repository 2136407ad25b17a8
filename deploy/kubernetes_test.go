package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

const namespace = "executor-exporter"

// clusterScoped kinds carry no namespace.
var clusterScoped = map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true}

func TestKustomizeBaseRenders(t *testing.T) {
	ms := parseManifests(t, kustomize(t, "deploy/kubernetes"))
	var kinds []string
	for _, m := range ms {
		kinds = append(kinds, m.Kind)
		if clusterScoped[m.Kind] {
			if m.Metadata.Namespace != "" {
				t.Errorf("%s %s is cluster-scoped but has namespace %q", m.Kind, m.Metadata.Name, m.Metadata.Namespace)
			}
		} else if m.Metadata.Namespace != namespace {
			t.Errorf("%s %s: namespace %q, want %q", m.Kind, m.Metadata.Name, m.Metadata.Namespace, namespace)
		}
	}
	slices.Sort(kinds)
	want := []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Namespace", "Service", "ServiceAccount"}
	if !slices.Equal(kinds, want) {
		t.Errorf("base renders %v, want %v", kinds, want)
	}
	for _, kind := range []string{"Namespace", "ServiceAccount"} {
		var o plainObject
		decodeStrict(t, ms, kind, &o)
	}
}

func TestDaemonSet(t *testing.T) {
	ms := parseManifests(t, kustomize(t, "deploy/kubernetes"))
	var ds daemonSet
	decodeStrict(t, ms, "DaemonSet", &ds)
	var sa plainObject
	decodeStrict(t, ms, "ServiceAccount", &sa)
	pod := ds.Spec.Template.Spec

	if !selects(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels) {
		t.Errorf("selector %v does not match the pod labels %v", ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels)
	}
	if pod.ServiceAccountName != sa.Metadata.Name {
		t.Errorf("serviceAccountName %q, ServiceAccount is %q", pod.ServiceAccountName, sa.Metadata.Name)
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Error("the Node-label lookup needs the service-account token mounted")
	}
	if !pod.HostPID {
		t.Error("hostPID must be true: JVMs in other pods are invisible otherwise")
	}
	if pod.HostNetwork && pod.DNSPolicy != "ClusterFirstWithHostNet" {
		t.Errorf("hostNetwork with dnsPolicy %q cannot resolve cluster names", pod.DNSPolicy)
	}
	tolerateAll := false
	for _, tol := range pod.Tolerations {
		tolerateAll = tolerateAll || (tol.Operator == "Exists" && tol.Key == "" && tol.Effect == "")
	}
	if !tolerateAll {
		t.Error("want a toleration {operator: Exists} so every node, tainted or not, runs the exporter")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":") {
		t.Errorf("image %q: pin a tag", c.Image)
	}
	checkFlagsExist(t, "DaemonSet args", c.Args)

	// Each --path.* flag points at a read-only mount of the host's path.
	hostPathOf := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPathOf[v.Name] = v.HostPath.Path
		}
	}
	mountOf := map[string]string{} // container path -> host path
	for _, m := range c.VolumeMounts {
		hp, ok := hostPathOf[m.Name]
		if !ok {
			t.Errorf("volumeMount %s has no hostPath volume", m.Name)
			continue
		}
		if !m.ReadOnly {
			t.Errorf("host path %s is mounted read-write; the exporter only reads", hp)
		}
		mountOf[m.MountPath] = hp
	}
	wantPaths := map[string]string{"path.procfs": "/proc", "path.sysfs": "/sys", "oom.kmsg-path": "/dev/kmsg"}
	args := map[string]string{}
	for _, a := range c.Args {
		name, _ := flagName(a)
		_, value, _ := strings.Cut(a, "=")
		args[name] = value
	}
	for flag, host := range wantPaths {
		inContainer, ok := args[flag]
		if !ok {
			t.Errorf("--%s not set", flag)
			continue
		}
		if got := mountOf[inContainer]; got != host {
			t.Errorf("--%s=%s is host path %q, want %q", flag, inContainer, got, host)
		}
		delete(mountOf, inContainer)
	}
	// A host mount that no flag points at is read by nothing: attack
	// surface with no use.
	for inContainer, host := range mountOf {
		t.Errorf("host path %s is mounted at %s but no flag reads it", host, inContainer)
	}

	nodeName := false
	for _, e := range c.Env {
		if e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName" {
			nodeName = true
		}
	}
	if !nodeName {
		t.Error("NODE_NAME must come from spec.nodeName (the Node-label lookup and --kubernetes.node-name use it)")
	}
	if args["kubernetes.node-name"] != "$(NODE_NAME)" {
		t.Errorf("--kubernetes.node-name=%q, want $(NODE_NAME)", args["kubernetes.node-name"])
	}

	sc := c.SecurityContext
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem must be true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged must not be set")
	}
	if !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("capabilities.drop = %v, want [ALL]", sc.Capabilities.Drop)
	}
	add := slices.Clone(sc.Capabilities.Add)
	slices.Sort(add)
	if want := []string{"DAC_READ_SEARCH", "SYS_PTRACE"}; !slices.Equal(add, want) {
		t.Errorf("capabilities.add = %v, want exactly %v (test/kube's TestRealNode shows each is needed)", add, want)
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" {
			t.Errorf("no %s request", r)
		}
	}
	if c.Resources.Limits["memory"] == "" {
		t.Error("no memory limit")
	}

	metricsPort := 0
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			metricsPort = p.ContainerPort
		}
	}
	if want := ":" + strconv.Itoa(metricsPort); args["web.listen-address"] != want {
		t.Errorf("--web.listen-address=%q but the metrics port is %d", args["web.listen-address"], metricsPort)
	}
	for _, p := range []*probe{c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.HTTPGet.Port != "metrics" {
			t.Error("readiness and liveness probes must GET the metrics port")
		}
	}

	// The headless Service selects these pods on the same port.
	var svc service
	decodeStrict(t, ms, "Service", &svc)
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("Service clusterIP %q, want None (headless)", svc.Spec.ClusterIP)
	}
	if !selects(svc.Spec.Selector, ds.Spec.Template.Metadata.Labels) {
		t.Errorf("Service selector %v does not select the DaemonSet's pods %v", svc.Spec.Selector, ds.Spec.Template.Metadata.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort != "metrics" || svc.Spec.Ports[0].Port != metricsPort {
		t.Errorf("Service ports %+v, want one named metrics targeting the container's metrics port %d", svc.Spec.Ports, metricsPort)
	}
}

func TestRBACGrantsExactlyWhatTheCodeCalls(t *testing.T) {
	ms := parseManifests(t, kustomize(t, "deploy/kubernetes"))
	var role clusterRole
	decodeStrict(t, ms, "ClusterRole", &role)
	var binding clusterRoleBinding
	decodeStrict(t, ms, "ClusterRoleBinding", &binding)
	var sa plainObject
	decodeStrict(t, ms, "ServiceAccount", &sa)

	granted := map[string]bool{}
	for _, r := range role.Rules {
		if !slices.Equal(r.APIGroups, []string{""}) || len(r.ResourceNames) != 0 || len(r.NonResourceURLs) != 0 {
			t.Errorf("ClusterRole rule %+v: want core resources only, no resource names or URLs", r)
		}
		for _, res := range r.Resources {
			for _, verb := range r.Verbs {
				granted[verb+" "+res] = true
			}
		}
	}
	if binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != role.Metadata.Name || binding.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
		t.Errorf("binding refers to %+v, not ClusterRole %s", binding.RoleRef, role.Metadata.Name)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" ||
		binding.Subjects[0].Name != sa.Metadata.Name || binding.Subjects[0].Namespace != sa.Metadata.Namespace {
		t.Errorf("binding subjects %+v, want the ServiceAccount %s/%s", binding.Subjects, sa.Metadata.Namespace, sa.Metadata.Name)
	}

	// The code side: every Kubernetes API path the exporter's code names,
	// and every HTTP method in the files that call them. A path ending in
	// "/" is followed by a name (get); one without is a collection (list).
	paths, methods := kubernetesCalls(t, filepath.Join(testenv.RepoRoot(), "internal", "cloud"))
	if !slices.Equal(methods, []string{"MethodGet"}) {
		t.Errorf("the Kubernetes client uses HTTP methods %v; the ClusterRole grants only get and list", methods)
	}
	called := map[string]bool{}
	for _, p := range paths {
		parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(p, "/api/v1/"), "/"), "/")
		if !strings.HasPrefix(p, "/api/v1/") || len(parts) != 1 {
			t.Errorf("Kubernetes API path %q: not a core resource or collection this test understands", p)
			continue
		}
		verb := "list"
		if strings.HasSuffix(p, "/") {
			verb = "get"
		}
		called[verb+" "+parts[0]] = true
	}
	if !maps.Equal(called, granted) {
		t.Errorf("the code calls %v, the ClusterRole grants %v: update both together", slices.Sorted(maps.Keys(called)), slices.Sorted(maps.Keys(granted)))
	}
	if want := map[string]bool{"get nodes": true, "list pods": true}; !maps.Equal(granted, want) {
		t.Errorf("ClusterRole grants %v, want exactly get nodes and list pods", slices.Sorted(maps.Keys(granted)))
	}
}

// kubernetesCalls lists the string literals that are Kubernetes API paths
// in the package's non-test files, and the net/http Method constants used
// in the files that hold them.
func kubernetesCalls(t *testing.T, dir string) (paths, methods []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		var filePaths, fileMethods []string
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, err := strconv.Unquote(n.Value); err == nil && (strings.HasPrefix(s, "/api/") || strings.HasPrefix(s, "/apis/")) {
						filePaths = append(filePaths, s)
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && strings.HasPrefix(n.Sel.Name, "Method") {
					fileMethods = append(fileMethods, n.Sel.Name)
				}
			case *ast.CompositeLit:
				// An httpget.Request without a Method is a GET.
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Request" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "httpget" && !hasKey(n, "Method") {
						fileMethods = append(fileMethods, "MethodGet")
					}
				}
			case *ast.CallExpr:
				// Client.Get is a GET.
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Get" {
					if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "http" {
						fileMethods = append(fileMethods, "MethodGet")
					}
				}
			}
			return true
		})
		if len(filePaths) > 0 {
			paths = append(paths, filePaths...)
			methods = append(methods, fileMethods...)
		}
	}
	slices.Sort(paths)
	slices.Sort(methods)
	return slices.Compact(paths), slices.Compact(methods)
}

// TestOOMPrivilegedOverlay: the opt-in overlay for /dev/kmsg differs from
// the base only in making the container privileged, in a way the API
// server accepts (privileged excludes allowPrivilegeEscalation: false).
func TestOOMPrivilegedOverlay(t *testing.T) {
	base := parseManifests(t, kustomize(t, "deploy/kubernetes"))
	over := parseManifests(t, kustomize(t, "deploy/kubernetes/oom-privileged"))
	if len(base) != len(over) {
		t.Fatalf("overlay renders %d documents, base %d", len(over), len(base))
	}
	var ds daemonSet
	decodeStrict(t, over, "DaemonSet", &ds)
	sc := ds.Spec.Template.Spec.Containers[0].SecurityContext
	if sc.Privileged == nil || !*sc.Privileged {
		t.Error("oom-privileged does not make the container privileged")
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		t.Error("privileged with allowPrivilegeEscalation: false is rejected by the API server")
	}
	for i := range base {
		if base[i].Kind != "DaemonSet" && string(base[i].raw) != string(over[i].raw) {
			t.Errorf("%s %s differs between base and oom-privileged", base[i].Kind, base[i].Metadata.Name)
		}
	}
}

// hasKey reports whether a keyed composite literal sets the field key.
func hasKey(lit *ast.CompositeLit, key string) bool {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return true
			}
		}
	}
	return false
}
