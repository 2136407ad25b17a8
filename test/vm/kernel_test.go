package vm_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// kernel is Debian's kernel as the VM boots it: the image and the modules
// the initramfs loads to mount the host's root over 9p, in load order.
type kernel struct {
	Package string   // e.g. linux-image-6.1.0-56-amd64-unsigned_6.1.192-2
	Image   string   // vmlinuz
	Modules []string // .ko files, each after the modules it depends on
}

// bootModules are what the initramfs needs beyond what Debian builds in:
// virtio over PCI and the 9p filesystem over it. Their dependencies are
// read from the modules themselves.
var bootModules = []string{"virtio_pci", "9pnet_virtio", "9p"}

// moduleDirs are where those modules and their dependencies live in the
// package; only these are unpacked.
var moduleDirs = []string{"kernel/drivers/virtio/", "kernel/net/9p/", "kernel/fs/9p/", "kernel/fs/netfs/", "kernel/fs/fscache/"}

// kernelCache is where kernels are kept between runs, beside the
// Makefile's other tools.
func kernelCache(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TOOLS_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("no home directory for the kernel cache: %v", err)
		}
		dir = filepath.Join(home, ".cache", "executor_exporter")
	}
	return filepath.Join(dir, "vm-kernel")
}

// debianKernel returns the kernel of the package VM_KERNEL_PACKAGE names
// (name=version), or else the one Debian's linux-image-amd64 depends on
// now, from the cache or fetched with apt-get download. Without the
// package lists (offline, no apt-get update) the newest cached kernel is
// used.
func debianKernel(t *testing.T) kernel {
	t.Helper()
	cache := kernelCache(t)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	name, version, err := kernelPackage()
	if err != nil {
		if k, ok := newestCached(cache); ok {
			t.Logf("%v; using the cached %s", err, k.Package)
			return k
		}
		testenv.Unavailable(t, "no Debian kernel to boot: %v", err)
	}
	dir := filepath.Join(cache, name+"_"+version)
	if k, ok := cachedKernel(dir); ok {
		return k
	}
	deb, err := downloadKernel(cache, name, version)
	if err != nil {
		if k, ok := newestCached(cache); ok {
			t.Logf("%v; using the cached %s", err, k.Package)
			return k
		}
		testenv.Unavailable(t, "no Debian kernel to boot: %v", err)
	}
	if err := unpackKernel(deb, dir); err != nil {
		// Another test run may have unpacked the same kernel meanwhile.
		if k, ok := cachedKernel(dir); ok {
			return k
		}
		t.Fatalf("unpacking %s: %v", deb, err)
	}
	_ = os.Remove(deb) // the unpacked part is what is kept
	k, ok := cachedKernel(dir)
	if !ok {
		t.Fatalf("%s has no vmlinuz or lacks a module of %v", deb, bootModules)
	}
	return k
}

// kernelPackage names the unsigned image package of the kernel that
// linux-image-amd64 (Debian's "current kernel" package) depends on, at
// that version: the unsigned one is the same kernel without the Secure
// Boot signature, which qemu's direct boot has no use for.
func kernelPackage() (name, version string, err error) {
	if v := os.Getenv("VM_KERNEL_PACKAGE"); v != "" {
		name, version, ok := strings.Cut(v, "=")
		if !ok {
			return "", "", fmt.Errorf("VM_KERNEL_PACKAGE=%q: want name=version", v)
		}
		return name, version, nil
	}
	if _, err := exec.LookPath("apt-cache"); err != nil {
		return "", "", errors.New("apt-cache not found: the VM tests boot Debian's kernel package")
	}
	candidate := func() ([]byte, error) {
		policy, err := exec.Command("apt-cache", "policy", "linux-image-amd64").Output()
		if err != nil {
			return nil, fmt.Errorf("apt-cache policy linux-image-amd64: %v", err)
		}
		m := regexp.MustCompile(`Candidate: (\S+)`).FindSubmatch(policy)
		if m == nil || string(m[1]) == "(none)" {
			return nil, errors.New("apt-cache has no candidate for linux-image-amd64 (apt-get update first)")
		}
		return m[1], nil
	}
	meta, err := candidate()
	if err != nil && os.Geteuid() == 0 {
		// A fresh machine whose package lists were never fetched (the
		// test dependencies were all there, so nothing updated them).
		if out, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return "", "", fmt.Errorf("%v; apt-get update: %v: %s", err, uerr, out)
		}
		meta, err = candidate()
	}
	if err != nil {
		return "", "", err
	}
	show, err := exec.Command("apt-cache", "show", "linux-image-amd64="+string(meta)).Output()
	if err != nil {
		return "", "", fmt.Errorf("apt-cache show linux-image-amd64=%s: %v", meta, err)
	}
	dep := regexp.MustCompile(`(?m)^Depends: (linux-image-\S+-amd64) \(= (\S+)\)`).FindSubmatch(show)
	if dep == nil {
		return "", "", fmt.Errorf("linux-image-amd64=%s depends on no kernel image:\n%s", meta, show)
	}
	return string(dep[1]) + "-unsigned", string(dep[2]), nil
}

func downloadKernel(cache, name, version string) (string, error) {
	cmd := exec.Command("apt-get", "download", "-q", name+"="+version)
	cmd.Dir = cache
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s=%s: %v\n%s", name, version, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(cache, name+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %v in %s", name, debs, cache)
	}
	return debs[0], nil
}

// unpackKernel writes the image and the module directories of a kernel
// package into dir, through a temporary directory so that an interrupted
// run leaves no half kernel behind.
func unpackKernel(deb, dir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("dpkg-deb", "--fsys-tarfile", deb)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(h.Name)
		var dst string
		switch {
		case regexp.MustCompile(`^boot/vmlinuz-`).MatchString(name):
			dst = filepath.Join(tmp, "vmlinuz")
		case wantedModule(name):
			dst = filepath.Join(tmp, "modules", path.Base(name))
		default:
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("dpkg-deb: %v: %s", err, stderr.Bytes())
	}
	if err := os.WriteFile(filepath.Join(tmp, "package"), []byte(strings.TrimSuffix(filepath.Base(deb), "_amd64.deb")), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

func wantedModule(name string) bool {
	_, rest, ok := strings.Cut(name, "lib/modules/")
	if !ok || !strings.HasSuffix(name, ".ko") {
		return false
	}
	_, rest, _ = strings.Cut(rest, "/") // the kernel release
	for _, d := range moduleDirs {
		if strings.HasPrefix(rest, d) {
			return true
		}
	}
	return false
}

// cachedKernel reads an unpacked kernel and orders its boot modules.
func cachedKernel(dir string) (kernel, bool) {
	pkg, err := os.ReadFile(filepath.Join(dir, "package"))
	if err != nil {
		return kernel{}, false
	}
	k := kernel{Package: string(pkg), Image: filepath.Join(dir, "vmlinuz")}
	if _, err := os.Stat(k.Image); err != nil {
		return kernel{}, false
	}
	mods, err := loadOrder(filepath.Join(dir, "modules"), bootModules)
	if err != nil {
		return kernel{}, false
	}
	k.Modules = mods
	return k, true
}

func newestCached(cache string) (kernel, bool) {
	dirs, _ := filepath.Glob(filepath.Join(cache, "linux-image-*"))
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if k, ok := cachedKernel(d); ok {
			return k, true
		}
	}
	return kernel{}, false
}

// loadOrder lists the modules to insmod for wanted, dependencies first.
// busybox's insmod does not resolve dependencies; the kernel records them
// in each module's .modinfo section ("depends=a,b").
func loadOrder(dir string, wanted []string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(name string, depth int) error
	visit = func(name string, depth int) error {
		name = strings.ReplaceAll(name, "-", "_")
		if seen[name] {
			return nil
		}
		if depth > 16 {
			return fmt.Errorf("module dependencies too deep at %s", name)
		}
		file := filepath.Join(dir, name+".ko")
		deps, err := moduleDepends(file)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, depth+1); err != nil {
				return err
			}
		}
		seen[name] = true
		order = append(order, file)
		return nil
	}
	for _, w := range wanted {
		if err := visit(w, 0); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func moduleDepends(file string) ([]string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("%s: no .modinfo", file)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					deps = append(deps, d)
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}
