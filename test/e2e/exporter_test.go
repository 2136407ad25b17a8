package e2e

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtureArgs point every root at committed fixtures, so the output depends
// on nothing of this machine.
func fixtureArgs(procfs string) []string {
	root := testjvm.RepoRoot()
	return []string{
		"--path.procfs=" + filepath.Join(root, "collector", "testdata", "memory", procfs),
		"--path.sysfs=" + filepath.Join(root, "test", "e2e", "testdata", "sys"),
		"--cloud.provider=none",
		"--oom.kmsg-path=" + filepath.Join(root, "test", "e2e", "testdata", "kmsg-empty"),
	}
}

// stableLines keeps the executor_* sample lines of a scrape that depend only
// on the fixtures: no durations, no build info, sorted.
func stableLines(text string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "executor_") ||
			strings.HasPrefix(line, "executor_scrape_collector_duration_seconds") ||
			strings.HasPrefix(line, "executor_exporter_build_info") ||
			strings.HasPrefix(line, "executor_metadata_last_refresh_timestamp_seconds") {
			continue
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return lines
}

// TestFixturesGolden is node_exporter's end-to-end test: the built binary
// over fixture roots, compared with a golden file (go test -update rewrites
// it), and checked by promtool.
func TestFixturesGolden(t *testing.T) {
	e := startExporter(t, fixtureArgs("full")...)
	text := e.scrapeText(t)
	promtoolCheckMetrics(t, text)

	got := strings.Join(stableLines(text), "\n") + "\n"
	golden := filepath.Join("testdata", "fixtures.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./test/e2e -run TestFixturesGolden -update)", err)
	}
	if got != string(want) {
		t.Fatalf("scrape differs from %s (rerun with -update if intended):\n--- got\n%s--- want\n%s", golden, got, want)
	}
}

// TestMalformedProcfsCostsOnlyItsCollector: a corrupt meminfo marks the
// memory collector failed, and the scrape still answers 200 with the rest.
func TestMalformedProcfsCostsOnlyItsCollector(t *testing.T) {
	e := startExporter(t, fixtureArgs("malformed")...)
	families := e.scrape(t) // fails the test on anything but 200
	if v, ok := findSample(families, "executor_scrape_collector_success", map[string]string{"collector": "memory"}); !ok || v != 0 {
		t.Fatalf("memory collector success = %v (present %v), want 0", v, ok)
	}
	if _, ok := findSample(families, "executor_node_oom_kills_total", nil); !ok {
		t.Fatal("vmstat series lost with meminfo")
	}
	if _, ok := findSample(families, "executor_exporter_build_info", nil); !ok {
		t.Fatal("build info lost")
	}
	if _, ok := families["executor_node_memory_total_bytes"]; ok {
		t.Fatal("meminfo series present from a malformed file")
	}
}

// TestLiveScrapeIsPromtoolClean scrapes this machine with default roots.
func TestLiveScrapeIsPromtoolClean(t *testing.T) {
	e := startExporter(t, "--cloud.provider=none")
	text := e.scrapeText(t)
	promtoolCheckMetrics(t, text)
	families := parseMetrics(t, text)
	for _, name := range []string{"executor_node_memory_total_bytes", "executor_node_memory_available_bytes", "executor_exporter_build_info"} {
		if _, ok := families[name]; !ok {
			t.Errorf("%s missing from a live scrape", name)
		}
	}
	if v, ok := findSample(families, "executor_scrape_collector_success", map[string]string{"collector": "memory"}); !ok || v != 1 {
		t.Errorf("memory collector success = %v, want 1", v)
	}
}

// TestWebConfigTLSAndBasicAuth serves through exporter-toolkit's
// --web.config.file: HTTPS with the right password gets metrics and the
// status page, a missing or wrong password gets 401.
func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := writeSelfSignedCert(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	config := "tls_server_config:\n  cert_file: " + certFile + "\n  key_file: " + keyFile +
		"\nbasic_auth_users:\n  prometheus: " + string(hash) + "\n"
	configFile := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	addr := testenv.FreeAddr(t)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	started := startExporterTLS(t, client, addr, "--web.config.file="+configFile, "--cloud.provider=none")

	getPath := func(path, user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, "https://"+started+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(user, pass string) int { return getPath("/metrics", user, pass) }
	// The status page and its JSON are served by the same server: the same
	// TLS and the same password.
	for _, path := range []string{"/", "/status.json"} {
		if code := getPath(path, "prometheus", "s3cret"); code != http.StatusOK {
			t.Errorf("%s with the right password: %d, want 200", path, code)
		}
		if code := getPath(path, "", ""); code != http.StatusUnauthorized {
			t.Errorf("%s with no password: %d, want 401", path, code)
		}
	}
	if code := get("prometheus", "s3cret"); code != http.StatusOK {
		t.Errorf("right password: %d, want 200", code)
	}
	if code := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("no password: %d, want 401", code)
	}
	if code := get("prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong password: %d, want 401", code)
	}
	// Plain HTTP on the TLS port must not be served.
	if resp, err := http.Get("http://" + started + "/metrics"); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served metrics on the TLS listener")
		}
		resp.Body.Close()
	}
}

// startExporterTLS starts the binary on addr and waits for its TLS listener.
func startExporterTLS(t *testing.T, client *http.Client, addr string, args ...string) string {
	t.Helper()
	e := startExporterNoWait(t, addr, args...)
	testenv.WaitFor(t, 20*time.Second, "TLS listener", func() bool {
		resp, err := client.Get("https://" + addr + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return e.Addr
}

func writeSelfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
