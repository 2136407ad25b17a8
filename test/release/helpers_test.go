// Package release tests what a release ships, from the outputs of `make
// release` and `make image` (RELEASE_DIR and OCI_ARCHIVE, set by `make
// test`): the archives, their checksums, the OCI image (its structure, two
// builds of one commit, and the amd64 image run by runc), and each make
// target the release workflow runs (.github/workflows/release.yml).
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// platforms are the ones `make release` builds (RELEASE_PLATFORMS).
var platforms = []string{"linux-amd64", "linux-arm64"}

func archiveName(version, platform string) string {
	return "executor_exporter-" + version + "." + platform + ".tar.gz"
}

// ociArchive returns $OCI_ARCHIVE, what `make image` wrote.
func ociArchive(t *testing.T) string {
	t.Helper()
	p := os.Getenv("OCI_ARCHIVE")
	if p == "" {
		testenv.Unavailable(t, "OCI_ARCHIVE is not set: run `make image` and set OCI_ARCHIVE=$PWD/.tarballs/executor_exporter-$(cat VERSION).oci.tar (make test does both)")
	}
	return p
}

// tool returns the path in env var name (a tool the Makefile built), or
// fails the test as unavailable.
func tool(t *testing.T, name string) string {
	t.Helper()
	p := os.Getenv(name)
	if p == "" {
		testenv.Unavailable(t, "%s is not set (make test sets it to the tool it built)", name)
	}
	return p
}

// readTarGz returns the regular files of a .tar.gz by name, and every
// entry's name in order.
func readTarGz(t *testing.T, path string) (files map[string][]byte, names []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return readTar(t, zr)
}

func readTar(t *testing.T, r io.Reader) (files map[string][]byte, names []string) {
	t.Helper()
	files = map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

// runMake runs a make target in dir and returns its output; it fails the
// test when make fails.
func runMake(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := makeCmd(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeCmd is make in dir, without what `make test` handed this test
// (OCI_ARCHIVE, RELEASE_DIR, its own MAKEFLAGS): a clone's make writes
// its own outputs.
func makeCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "OCI_ARCHIVE", "RELEASE_DIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// revision is the commit the release was built from.
func revision(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", testenv.RepoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}

func fileEqual(t *testing.T, got []byte, repoPath string) bool {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), repoPath))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(got, want)
}
