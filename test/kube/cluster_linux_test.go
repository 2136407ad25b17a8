// Package kube runs the built exporter against a real kube-apiserver and
// etcd: the shipped manifests applied with the server's own validation,
// RBAC as the API server enforces it, a ServiceAccount token from the
// TokenRequest API, the Node's labels and the pods its field selector
// lists, and an API server that goes away and comes back; and a real node
// (TestRealNode): a kubelet with Debian's containerd and runc running the
// chart's pod and Spark executors' pods.
//
// kube-apiserver, kubectl and etcd are built from pinned Go modules by
// `make kube` (scripts/build-kube.sh) into a cache; make test passes their
// directory as KUBE_DIR, and the node's kubelet (make kubelet) and pod
// sandbox image (make pause-image) as KUBELET and PAUSE_IMAGE.
package kube

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// kubeDir returns $KUBE_DIR after checking it holds what `make kube` builds.
func kubeDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBE_DIR")
	if dir == "" {
		testenv.Unavailable(t, "KUBE_DIR is not set: make test builds kube-apiserver, etcd and kubectl (make kube) and sets it")
	}
	for _, f := range []string{"kube-apiserver", "etcd", "kubectl", "crds"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			testenv.Unavailable(t, "KUBE_DIR=%s lacks %s (make kube builds it): %v", dir, f, err)
		}
	}
	return dir
}

// process is a server the test starts, stops and may start again.
type process struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

// startProcess runs cmd, kills it when the test ends, and prints its
// output if the test failed.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	return startProcessFor(t, t, name, cmd)
}

// startProcessFor is startProcess for a process that outlives the subtest
// t that starts it: it is killed when owner ends.
func startProcessFor(t, owner *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = testenv.LockedWriter{Mu: &p.mu, W: &p.out}
	cmd.Stderr = testenv.LockedWriter{Mu: &p.mu, W: &p.out}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	owner.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if owner.Failed() {
			owner.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

// Output is what the process wrote so far.
func (p *process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Exited reports whether the process has ended.
func (p *process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the process with SIGTERM, as the kubelet stops a static pod,
// and waits for it.
func (p *process) Stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not stop within 60s of SIGTERM", p.name)
	}
}

// cluster is etcd and a kube-apiserver on loopback, and an admin.
type cluster struct {
	t          *testing.T // the test the cluster lives for
	dir, bin   string
	pki        pki
	etcdURL    string
	Addr       string // the API server's host:port
	URL        string
	AdminToken string
	NodeToken  string // the kubelet's of realNode (node_linux_test.go)
	apiserver  *process
	http       *http.Client
	admin      string // kubeconfig of the admin
}

// startCluster starts etcd and the API server and waits until the server
// is ready (its RBAC bootstrap roles included).
func startCluster(t *testing.T) *cluster {
	t.Helper()
	testenv.RequireRoot(t) // memory cgroups and the exporter's mount namespace
	c := &cluster{t: t, dir: t.TempDir(), bin: kubeDir(t)}
	c.pki = newPKI(t, filepath.Join(c.dir, "pki"))
	c.AdminToken, c.NodeToken = randomToken(t), randomToken(t)
	// token,user,uid,"groups": system:masters is bound to cluster-admin;
	// the node's kubelet is system:node:<name> in system:nodes.
	writeFile(t, filepath.Join(c.dir, "tokens.csv"), []byte(c.AdminToken+",test-admin,test-admin,\"system:masters\"\n"+
		c.NodeToken+","+nodeUser+","+nodeUser+",\"system:nodes\"\n"))

	client, peer := testenv.FreeAddr(t), testenv.FreeAddr(t)
	c.etcdURL = "http://" + client
	etcd := exec.Command(filepath.Join(c.bin, "etcd"),
		"--name=test", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+c.etcdURL, "--advertise-client-urls="+c.etcdURL,
		"--listen-peer-urls=http://"+peer, "--initial-advertise-peer-urls=http://"+peer,
		"--initial-cluster=test=http://"+peer,
		// A test's data is thrown away: no fsync, which a busy disk makes slow.
		"--unsafe-no-fsync", "--log-level=warn")
	startProcess(t, "etcd", etcd)

	c.Addr = testenv.FreeAddr(t)
	c.URL = "https://" + c.Addr
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.CAPEM)
	c.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	c.admin = c.kubeconfig(t, "admin", c.AdminToken)
	c.StartAPIServer(t)
	return c
}

// StartAPIServer starts the API server (again, after StopAPIServer, on the
// same address and etcd) and waits until it is ready.
func (c *cluster) StartAPIServer(t *testing.T) {
	t.Helper()
	host, port, _ := net.SplitHostPort(c.Addr)
	cmd := exec.Command(filepath.Join(c.bin, "kube-apiserver"),
		"--etcd-servers="+c.etcdURL,
		"--bind-address="+host, "--advertise-address="+host, "--secure-port="+port,
		"--tls-cert-file="+c.pki.ServerCert, "--tls-private-key-file="+c.pki.ServerKey,
		"--cert-dir="+filepath.Join(c.dir, "apiserver-certs"),
		"--token-auth-file="+filepath.Join(c.dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+c.pki.SAPub,
		"--service-account-signing-key-file="+c.pki.SAKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		// No kubelets, no controller manager: nothing would keep the
		// kubernetes Service's endpoints.
		"--endpoint-reconciler-type=none",
		// The oom-privileged overlay runs the exporter privileged, which
		// clusters allow (kubeadm, EKS, GKE and AKS all set this).
		"--allow-privileged=true",
		"--profiling=false", "-v=1")
	c.apiserver = startProcessFor(t, c.t, "kube-apiserver", cmd)
	p := c.apiserver
	testenv.WaitFor(t, 3*time.Minute, "kube-apiserver to be ready", func() bool {
		if p.Exited() {
			t.Fatalf("kube-apiserver exited:\n%s", p.Output())
		}
		code, _ := c.do(t, c.AdminToken, http.MethodGet, "/readyz", "", nil)
		return code == http.StatusOK
	})
}

// StopAPIServer stops the API server; etcd keeps the cluster's objects.
func (c *cluster) StopAPIServer(t *testing.T) {
	t.Helper()
	c.apiserver.Stop(t)
}

// do sends a request to the API server with token; a connection error is
// status 0. body, when not nil, is sent as JSON (or as contentType).
func (c *cluster) do(t *testing.T, token, method, path, contentType string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, ok := body.([]byte)
		if !ok {
			var err error
			if data, err = json.Marshal(body); err != nil {
				t.Fatal(err)
			}
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// Admin sends a request as the admin and fails the test unless the
// status is want; it decodes the answer into out when out is not nil.
func (c *cluster) Admin(t *testing.T, method, path, contentType string, body any, want int, out any) {
	t.Helper()
	code, data := c.do(t, c.AdminToken, method, path, contentType, body)
	if code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// kubeconfig writes a kubeconfig for a user with a bearer token.
func (c *cluster) kubeconfig(t *testing.T, name, token string) string {
	t.Helper()
	path := filepath.Join(c.dir, "kubeconfig-"+name)
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: %s}
current-context: test
`, c.URL, c.pki.CA, name, token, name)
	writeFile(t, path, []byte(cfg))
	return path
}

// Kubectl runs the built kubectl with a kubeconfig (c.admin for the admin)
// and stdin, and returns its output and error.
func (c *cluster) Kubectl(t *testing.T, kubeconfig string, stdin []byte, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, "kubectl"), append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// MustKubectl is Kubectl as the admin, failing the test on an error.
func (c *cluster) MustKubectl(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(t, c.admin, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ServiceAccountToken asks the TokenRequest API for a token of a
// ServiceAccount, as the kubelet does for a pod's projected token.
func (c *cluster) ServiceAccountToken(t *testing.T, namespace, name string) string {
	t.Helper()
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	c.Admin(t, http.MethodPost, "/api/v1/namespaces/"+namespace+"/serviceaccounts/"+name+"/token", "",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
			"spec": map[string]any{"expirationSeconds": 3600}}, http.StatusCreated, &tr)
	if tr.Status.Token == "" {
		t.Fatalf("TokenRequest for %s/%s: no token", namespace, name)
	}
	return tr.Status.Token
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
