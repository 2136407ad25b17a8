package release

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

const imageName = "ghcr.io/executor-exporter/executor_exporter"

// The parts of OCI's index, manifest and config the test checks.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type index struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// ociLayout is an OCI archive read into memory: its files by path.
type ociLayout map[string][]byte

func readOCIArchive(t *testing.T, path string) ociLayout {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, _ := readTar(t, f)
	return ociLayout(files)
}

func (l ociLayout) blob(t *testing.T, digest string, into any) []byte {
	t.Helper()
	b, ok := l["blobs/"+strings.Replace(digest, ":", "/", 1)]
	if !ok {
		t.Fatalf("the layout has no blob %s", digest)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("blob %s: %v", digest, err)
		}
	}
	return b
}

// top is index.json's one entry: the multi-arch index, named.
func (l ociLayout) top(t *testing.T) descriptor {
	t.Helper()
	var idx index
	if err := json.Unmarshal(l["index.json"], &idx); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(idx.Manifests) != 1 {
		t.Fatalf("index.json has %d entries, want 1 (the multi-arch index)", len(idx.Manifests))
	}
	return idx.Manifests[0]
}

// TestImage: the OCI archive is an image layout whose index.json names a
// multi-arch index as ghcr.io/executor-exporter/executor_exporter:vVERSION
// (for ctr images import and podman load); each platform's image is one
// layer holding the release archive's own binary, Debian's CA bundle and
// passwd with nonroot, runs as 65532, and carries the OCI labels.
func TestImage(t *testing.T) {
	layout := readOCIArchive(t, ociArchive(t))
	version := testenv.Version(t)
	if !strings.Contains(string(layout["oci-layout"]), `"imageLayoutVersion"`) {
		t.Errorf("oci-layout: %q", layout["oci-layout"])
	}
	top := layout.top(t)
	ref := imageName + ":v" + version
	if top.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index.json's entry is a %s, want an OCI image index", top.MediaType)
	}
	for _, a := range []string{"org.opencontainers.image.ref.name", "io.containerd.image.name"} {
		if top.Annotations[a] != ref {
			t.Errorf("index.json's %s = %q, want %q", a, top.Annotations[a], ref)
		}
	}
	var idx index
	layout.blob(t, top.Digest, &idx)
	release := testenv.ReleaseDir(t)
	seen := map[string]bool{}
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s has no platform", m.Digest)
		}
		platform := m.Platform.OS + "-" + m.Platform.Architecture
		seen[platform] = true
		var man manifest
		layout.blob(t, m.Digest, &man)
		var cfg imageConfig
		layout.blob(t, man.Config.Digest, &cfg)
		if cfg.OS+"-"+cfg.Architecture != platform {
			t.Errorf("%s: config says %s/%s", platform, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/bin/executor_exporter" {
			t.Errorf("%s: user %q, entrypoint %q", platform, cfg.Config.User, cfg.Config.Entrypoint)
		}
		for k, v := range map[string]string{
			"org.opencontainers.image.source":   "https://github.com/executor-exporter/executor_exporter",
			"org.opencontainers.image.version":  version,
			"org.opencontainers.image.revision": revision(t),
			"org.opencontainers.image.title":    "executor_exporter",
			"org.opencontainers.image.licenses": "Apache-2.0",
		} {
			if cfg.Config.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", platform, k, cfg.Config.Labels[k], v)
			}
		}
		if len(man.Layers) != 1 {
			t.Fatalf("%s: %d layers, want 1", platform, len(man.Layers))
		}
		zr, err := gzip.NewReader(bytes.NewReader(layout.blob(t, man.Layers[0].Digest, nil)))
		if err != nil {
			t.Fatal(err)
		}
		files, names := readTar(t, zr)
		if len(names) != 12 {
			t.Errorf("%s: layer holds %q", platform, names)
		}
		archived, _ := readTarGz(t, filepath.Join(release, archiveName(version, platform)))
		if !bytes.Equal(files["bin/executor_exporter"], archived["executor_exporter-"+version+"."+platform+"/executor_exporter"]) {
			t.Errorf("%s: the image's binary is not the release archive's", platform)
		}
		if !bytes.Equal(files["etc/ssl/certs/ca-certificates.crt"], mustRead(t, "/etc/ssl/certs/ca-certificates.crt")) {
			t.Errorf("%s: the image's CA bundle is not Debian's", platform)
		}
		if !fileEqual(t, files["LICENSE"], "LICENSE") {
			t.Errorf("%s: the image's LICENSE is not the repository's", platform)
		}
		if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot 65532:\n%s", platform, files["etc/passwd"])
		}
	}
	for _, p := range platforms {
		if !seen[p] {
			t.Errorf("the index has no %s image", p)
		}
	}
}

// TestImageReproducible: two clean clones of this commit, in different
// directories, each running `make release image`, write images with the
// same digest; so does this checkout when it has no uncommitted change.
// The clones are on this checkout's branch: the binaries record it.
func TestImageReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release twice")
	}
	ours := readOCIArchive(t, ociArchive(t)).top(t).Digest
	toolsDir := tool(t, "TOOLS_DIR")
	rev := revision(t)
	branch, err := exec.Command("git", "-C", testenv.RepoRoot(), "rev-parse", "--abbrev-ref", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for i := range 2 {
		clone := filepath.Join(t.TempDir(), "executor_exporter")
		if out, err := exec.Command("git", "clone", "--quiet", "--no-checkout", testenv.RepoRoot(), clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		checkout := []string{"-C", clone, "checkout", "--quiet", "-B", strings.TrimSpace(string(branch)), rev}
		if strings.TrimSpace(string(branch)) == "HEAD" { // detached, as on a tag
			checkout = []string{"-C", clone, "checkout", "--quiet", "--detach", rev}
		}
		if out, err := exec.Command("git", checkout...).CombinedOutput(); err != nil {
			t.Fatalf("git checkout: %v\n%s", err, out)
		}
		runMake(t, clone, "image", "TOOLS_DIR="+toolsDir)
		archive := filepath.Join(clone, ".tarballs", "executor_exporter-"+testenv.Version(t)+".oci.tar")
		digests = append(digests, readOCIArchive(t, archive).top(t).Digest)
		t.Logf("clone %d: %s", i, digests[i])
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one commit: digests %s and %s", digests[0], digests[1])
	}
	status, err := exec.Command("git", "-C", testenv.RepoRoot(), "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(status) == 0 && ours != digests[0] {
		t.Errorf("make image here gave %s, a clean clone %s", ours, digests[0])
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
