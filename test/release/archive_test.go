package release

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// TestArchives: each platform's archive holds exactly the binary, LICENSE,
// the systemd unit and its default file under one top directory, as promu
// names it; the binary is a static ELF for that architecture; the amd64
// one reports the VERSION file and the commit.
func TestArchives(t *testing.T) {
	dir := testenv.ReleaseDir(t)
	version := testenv.Version(t)
	machines := map[string]elf.Machine{"linux-amd64": elf.EM_X86_64, "linux-arm64": elf.EM_AARCH64}
	for _, platform := range platforms {
		t.Run(platform, func(t *testing.T) {
			top := "executor_exporter-" + version + "." + platform + "/"
			files, names := readTarGz(t, filepath.Join(dir, archiveName(version, platform)))
			slices.Sort(names)
			want := []string{top, top + "LICENSE", top + "executor_exporter", top + "executor_exporter.default", top + "executor_exporter.service"}
			if !slices.Equal(names, want) {
				t.Errorf("archive holds %q, want %q", names, want)
			}
			for name, repoPath := range map[string]string{
				"LICENSE":                   "LICENSE",
				"executor_exporter.service": "deploy/systemd/executor_exporter.service",
				"executor_exporter.default": "deploy/systemd/executor_exporter.default",
			} {
				if !fileEqual(t, files[top+name], repoPath) {
					t.Errorf("the archive's %s is not %s", name, repoPath)
				}
			}
			bin := files[top+"executor_exporter"]
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("executor_exporter is not ELF: %v", err)
			}
			if f.Machine != machines[platform] {
				t.Errorf("executor_exporter is for %v, want %v", f.Machine, machines[platform])
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("executor_exporter is dynamically linked (it has an interpreter)")
				}
			}
			if platform != "linux-amd64" {
				return
			}
			path := filepath.Join(t.TempDir(), "executor_exporter")
			writeFile(t, path, bin, 0o755)
			out, err := exec.Command(path, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("--version: %v: %s", err, out)
			}
			for _, w := range []string{"version " + version + " ", "revision: " + revision(t)} {
				if !strings.Contains(string(out), w) {
					t.Errorf("--version says %q, lacks %q", out, w)
				}
			}
		})
	}
}

// TestChecksums: sha256sums.txt has one line per archive, in sha256sum's
// format, and each sum is the archive's; GNU sha256sum -c agrees.
func TestChecksums(t *testing.T) {
	dir := testenv.ReleaseDir(t)
	version := testenv.Version(t)
	raw, err := os.ReadFile(filepath.Join(dir, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("sha256sums.txt: bad line %q", sc.Text())
		}
		got[name] = sum
	}
	if len(got) != len(platforms) {
		t.Errorf("sha256sums.txt lists %d files, want the %d archives:\n%s", len(got), len(platforms), raw)
	}
	for _, platform := range platforms {
		name := archiveName(version, platform)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if got[name] != hex.EncodeToString(h[:]) {
			t.Errorf("sha256sums.txt gives %s %q, the file's is %x", name, got[name], h)
		}
	}
	cmd := exec.Command("sha256sum", "--check", "--strict", "sha256sums.txt")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v\n%s", err, out)
	}
}
