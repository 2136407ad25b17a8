package release

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"go.yaml.in/yaml/v2"
)

// startRegistry serves an OCI registry on the loopback (crane registry
// serve: go-containerregistry's registry, in memory) and returns its
// address.
func startRegistry(t *testing.T) string {
	t.Helper()
	addr := testenv.FreeAddr(t)
	testenv.StartDaemon(t, tool(t, "CRANE"), "registry", "serve", "--address", addr)
	testenv.WaitFor(t, 20*time.Second, "the registry on "+addr, func() bool {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return addr
}

func crane(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(tool(t, "CRANE"), args...).Output()
	if err != nil {
		t.Fatalf("crane %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// TestImagePushAndRun: `make image-push` puts the archive's index in a
// registry under its tag, with the archive's digest; the amd64 image
// pulled back from there (crane export) runs under Debian's runc as
// nonroot, with the host's network, and serves /metrics with the
// release's version and revision.
func TestImagePushAndRun(t *testing.T) {
	archive := ociArchive(t)
	version := testenv.Version(t)
	reg := startRegistry(t)
	runMake(t, testenv.RepoRoot(), "image-push", "OCI_ARCHIVE="+archive, "REGISTRY="+reg+"/executor-exporter")
	ref := reg + "/executor-exporter/executor_exporter:v" + version
	if got, want := crane(t, "digest", ref), readOCIArchive(t, archive).top(t).Digest; got != want {
		t.Fatalf("the registry has %s as %s, the archive %s", ref, got, want)
	}

	testenv.RequireRoot(t)
	runc := testenv.RequireTool(t, "runc")
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	fsTar := filepath.Join(t.TempDir(), "fs.tar")
	crane(t, "export", "--platform", "linux/amd64", ref, fsTar)
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", fsTar, "-C", rootfs, "--same-owner", "--numeric-owner").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if out, err := exec.Command(runc, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v\n%s", err, out)
	}
	addr := testenv.FreeAddr(t)
	editSpec(t, filepath.Join(bundle, "config.json"), []string{"/bin/executor_exporter", "--web.listen-address=" + addr})

	id := "executor-exporter-release-test-" + strings.ReplaceAll(filepath.Base(bundle), "/", "")
	cmd := exec.Command(runc, "run", "--bundle", bundle, id)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command(runc, "kill", id, "KILL").Run()
		_ = cmd.Wait()
		_ = exec.Command(runc, "delete", "--force", id).Run()
		if t.Failed() {
			t.Logf("container output:\n%s", logs.String())
		}
	})
	var body []byte
	testenv.WaitFor(t, 30*time.Second, "the container's /metrics on "+addr, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body = nil
		var b bytes.Buffer
		if _, err := b.ReadFrom(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			return false
		}
		body = b.Bytes()
		return true
	})
	info := regexp.MustCompile(`(?m)^executor_exporter_build_info\{.*\} 1$`).Find(body)
	if info == nil {
		t.Fatalf("no executor_exporter_build_info in /metrics:\n%.2000s", body)
	}
	for _, w := range []string{`version="` + version + `"`, `revision="` + revision(t) + `"`} {
		if !bytes.Contains(info, []byte(w)) {
			t.Errorf("%s lacks %s", info, w)
		}
	}
	// The process in the container is the image's user.
	state, err := exec.Command(runc, "state", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Pid int }
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.Pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Uid:\s+65532\s`).Match(status) {
		t.Errorf("the container's process does not run as 65532:\n%s", status)
	}
}

// editSpec turns `runc spec`'s default into the image's: its entrypoint
// with args, its user, a read-only root, no terminal, and the host's
// network (no network namespace), so the test reaches it on the loopback.
func editSpec(t *testing.T, path string, args []string) {
	t.Helper()
	var spec map[string]any
	if err := json.Unmarshal(mustRead(t, path), &spec); err != nil {
		t.Fatal(err)
	}
	process := spec["process"].(map[string]any)
	process["terminal"] = false
	process["args"] = args
	process["user"] = map[string]any{"uid": 65532, "gid": 65532}
	process["cwd"] = "/"
	spec["root"] = map[string]any{"path": "rootfs", "readonly": true}
	linux := spec["linux"].(map[string]any)
	var namespaces []any
	for _, ns := range linux["namespaces"].([]any) {
		if ns.(map[string]any)["type"] != "network" {
			namespaces = append(namespaces, ns)
		}
	}
	linux["namespaces"] = namespaces
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, b, 0o644)
}

// TestChartPush: `make chart-package` writes the chart as
// .tarballs/executor-exporter-VERSION.tgz (chart and app version VERSION),
// `make chart-push` puts it in a registry as an OCI artifact, and helm
// pulls the same bytes back from oci://…/charts/executor-exporter.
func TestChartPush(t *testing.T) {
	helm := tool(t, "HELM")
	version := testenv.Version(t)
	for _, v := range []string{"HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"} {
		t.Setenv(v, t.TempDir())
	}
	reg := startRegistry(t)
	root := testenv.RepoRoot()
	runMake(t, root, "chart-package", "HELM="+helm)
	pkg := filepath.Join(root, ".tarballs", "executor-exporter-"+version+".tgz")
	files, _ := readTarGz(t, pkg)
	chart := string(files["executor-exporter/Chart.yaml"])
	for _, w := range []string{"\nversion: " + version + "\n", "\nappVersion: " + version + "\n"} {
		if !strings.Contains("\n"+chart, w) {
			t.Errorf("the packaged Chart.yaml lacks %q:\n%s", strings.TrimSpace(w), chart)
		}
	}
	runMake(t, root, "chart-push", "HELM="+helm, "REGISTRY="+reg+"/executor-exporter", "HELM_PUSH_FLAGS=--plain-http")
	dest := t.TempDir()
	if out, err := exec.Command(helm, "pull", "oci://"+reg+"/executor-exporter/charts/executor-exporter",
		"--version", version, "--plain-http", "--destination", dest).CombinedOutput(); err != nil {
		t.Fatalf("helm pull: %v\n%s", err, out)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(dest, "executor-exporter-"+version+".tgz")), mustRead(t, pkg)) {
		t.Error("the chart pulled back differs from the one pushed")
	}
}

// TestRegistryLogin: `make registry-login` stores the credentials for the
// registry's host where crane (DOCKER_CONFIG) and helm (its registry
// config, after logging in) keep them. The registry is crane's, behind a
// TLS proxy that asks for those credentials: helm logs in over HTTPS only.
func TestRegistryLogin(t *testing.T) {
	helm := tool(t, "HELM")
	backend, err := url.Parse("http://" + startRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	var sawAuth atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(backend)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "releaser" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		sawAuth.Store(true)
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	docker, helmConfig := t.TempDir(), t.TempDir()
	t.Setenv("DOCKER_CONFIG", docker)
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(helmConfig, "config.json"))
	t.Setenv("REGISTRY_USER", "releaser")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	runMake(t, testenv.RepoRoot(), "registry-login", "HELM="+helm, "REGISTRY="+host+"/executor-exporter", "HELM_LOGIN_FLAGS=--insecure")
	if !sawAuth.Load() {
		t.Error("helm did not log in to the registry with the credentials")
	}
	for _, f := range []string{filepath.Join(docker, "config.json"), filepath.Join(helmConfig, "config.json")} {
		if !strings.Contains(string(mustRead(t, f)), `"`+host+`"`) {
			t.Errorf("%s has no credentials for %s:\n%s", f, host, mustRead(t, f))
		}
	}
	// Without credentials, nothing is stored and make says why.
	t.Setenv("REGISTRY_PASSWORD", "")
	out, err := makeCmd(testenv.RepoRoot(), "registry-login", "HELM="+helm, "REGISTRY="+host).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "REGISTRY_USER and REGISTRY_PASSWORD must be set") {
		t.Errorf("registry-login without a password: %v\n%s", err, out)
	}
}

// TestGitHubRelease: the release target uploads exactly the archives and
// sha256sums.txt (DRY_RUN lists them; the upload itself is GitHub's CLI
// against GitHub, which no test here reaches), and the workflow's tag
// check accepts vVERSION only.
func TestGitHubRelease(t *testing.T) {
	testenv.ReleaseDir(t)
	version := testenv.Version(t)
	root := testenv.RepoRoot()
	got := strings.Fields(runMake(t, root, "github-release", "DRY_RUN=1"))
	want := []string{".tarballs/" + archiveName(version, "linux-amd64"), ".tarballs/" + archiveName(version, "linux-arm64"), ".tarballs/sha256sums.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("github-release would upload %q, want %q", got, want)
	}
	runMake(t, root, "release-check-tag", "TAG=v"+version)
	out, err := makeCmd(root, "release-check-tag", "TAG=v"+version+"-other").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is not v"+version) {
		t.Errorf("release-check-tag with another tag: %v\n%s", err, out)
	}
}

// exercised are the make targets the workflows may run, each with the
// test that runs it here.
var exercised = map[string]string{
	"test":              ".ci/run, the whole suite",
	"release":           "make test, then TestArchives, TestChecksums",
	"image":             "make test, then TestImage; TestImageReproducible",
	"chart-package":     "TestChartPush",
	"chart-push":        "TestChartPush",
	"image-push":        "TestImagePushAndRun",
	"registry-login":    "TestRegistryLogin",
	"github-release":    "TestGitHubRelease (DRY_RUN)",
	"release-check-tag": "TestGitHubRelease",
}

// TestWorkflows: every step of every workflow is an action pinned to a
// commit or `make TARGET` for a target this suite exercises, but for one
// step that installs make itself.
func TestWorkflows(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), ".github", "workflows", "*.yml"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("workflows: %v %v", paths, err)
	}
	pinned := regexp.MustCompile(`^[\w.-]+/[\w.-]+@[0-9a-f]{40}$`)
	makeStep := regexp.MustCompile(`^make ([\w-]+)( [A-Z_]+="?[^ ]*"?)*$`)
	for _, p := range paths {
		var wf struct {
			Jobs map[string]struct {
				Steps []struct {
					Name string `yaml:"name"`
					Uses string `yaml:"uses"`
					Run  string `yaml:"run"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(mustRead(t, p), &wf); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for job, j := range wf.Jobs {
			for _, s := range j.Steps {
				run := strings.TrimSpace(s.Run)
				switch {
				case s.Uses != "":
					if !pinned.MatchString(s.Uses) {
						t.Errorf("%s %s: %s is not pinned to a commit", filepath.Base(p), job, s.Uses)
					}
				case strings.HasPrefix(s.Name, "make, git"):
					if !strings.HasPrefix(run, "apt-get update -qq && apt-get install ") {
						t.Errorf("%s %s: the bootstrap step runs %q", filepath.Base(p), job, run)
					}
				default:
					m := makeStep.FindStringSubmatch(run)
					if m == nil {
						t.Errorf("%s %s: step %q is not a make target", filepath.Base(p), job, run)
					} else if exercised[m[1]] == "" {
						t.Errorf("%s %s: make %s is exercised by no test", filepath.Base(p), job, m[1])
					}
				}
			}
		}
	}
}
