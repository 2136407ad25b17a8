// Command ociimage writes executor_exporter's multi-arch container image as
// an OCI archive (an OCI image layout in a tar), without a container daemon
// and without a base image: each platform's image is one layer holding the
// release binary, Debian's CA bundle, the passwd and group entries of root,
// nobody and nonroot (65532, as distroless has them) and the LICENSE.
//
// The image, index and layout are go-containerregistry's; this program only
// says what goes in. The result is reproducible: every timestamp is
// SOURCE_DATE_EPOCH, every owner and mode is fixed, entries are sorted, so
// the same binaries give the same digest.
//
//	ociimage -name ghcr.io/executor-exporter/executor_exporter:v0.1.0 \
//	  -binary linux/amd64=.build/linux-amd64/executor_exporter \
//	  -binary linux/arm64=.build/linux-arm64/executor_exporter \
//	  -label org.opencontainers.image.version=0.1.0 -o image.oci.tar
//
// It prints the index's digest.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as, as distroless's :nonroot images define it.
const nonroot = 65532

// passwd and group: root, nobody and nonroot, as in distroless.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	var binaries, labels multiFlag
	fl.Var(&binaries, "binary", "os/arch=path of a platform's executor_exporter (repeat)")
	fl.Var(&labels, "label", "key=value, an image label and index annotation (repeat)")
	name := fl.String("name", "", "the image's name and tag (org.opencontainers.image.ref.name)")
	certs := fl.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to copy")
	license := fl.String("license", "LICENSE", "the license file to copy")
	out := fl.String("o", "", "the OCI archive to write")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *name == "" || *out == "" || len(binaries) == 0 {
		return errors.New("-name, -o and at least one -binary are required")
	}
	created, err := sourceDate()
	if err != nil {
		return err
	}
	annotations := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return fmt.Errorf("-label %q: want key=value", l)
		}
		annotations[k] = v
	}
	annotations["org.opencontainers.image.created"] = created.Format(time.RFC3339)

	shared := map[string][]byte{}
	for path, src := range map[string]string{"etc/ssl/certs/ca-certificates.crt": *certs, "LICENSE": *license} {
		if shared[path], err = os.ReadFile(src); err != nil {
			return err
		}
	}

	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range binaries {
		platform, path, ok := strings.Cut(b, "=")
		osName, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 {
			return fmt.Errorf("-binary %q: want os/arch=path", b)
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		img, err := platformImage(bin, shared, v1.Platform{OS: osName, Architecture: arch}, annotations, created)
		if err != nil {
			return fmt.Errorf("%s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}
	idx = mutate.Annotations(idx, annotations).(v1.ImageIndex)
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if err := writeArchive(*out, idx, *name); err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}

// sourceDate is SOURCE_DATE_EPOCH (the Makefile sets it to the commit's
// time); every timestamp in the image is this one.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, errors.New("SOURCE_DATE_EPOCH is not set (the commit's time: git log -1 --format=%ct)")
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// platformImage is one platform's image: a single layer on nothing, run as
// nonroot, with the labels.
func platformImage(bin []byte, shared map[string][]byte, p v1.Platform, labels map[string]string, created time.Time) (v1.Image, error) {
	layerTar, err := rootfs(bin, shared, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "make image", Comment: "executor_exporter, CA certificates, passwd"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Architecture
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", nonroot, nonroot),
		Entrypoint:   []string{"/bin/executor_exporter"},
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		ExposedPorts: map[string]struct{}{"9482/tcp": {}},
		WorkingDir:   "/",
		Labels:       labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// rootfs is the layer's tar: every entry owned by root (nonroot's home by
// nonroot), with a fixed mode and the source date, in path order.
func rootfs(bin []byte, shared map[string][]byte, created time.Time) ([]byte, error) {
	type entry struct {
		mode     int64
		uid      int
		data     []byte
		dir      bool
		typeflag byte
	}
	files := map[string]entry{
		"bin/":                              {mode: 0o755, dir: true},
		"bin/executor_exporter":             {mode: 0o755, data: bin},
		"etc/":                              {mode: 0o755, dir: true},
		"etc/passwd":                        {mode: 0o644, data: []byte(passwd)},
		"etc/group":                         {mode: 0o644, data: []byte(group)},
		"etc/ssl/":                          {mode: 0o755, dir: true},
		"etc/ssl/certs/":                    {mode: 0o755, dir: true},
		"etc/ssl/certs/ca-certificates.crt": {mode: 0o644, data: shared["etc/ssl/certs/ca-certificates.crt"]},
		"home/":                             {mode: 0o755, dir: true},
		"home/nonroot/":                     {mode: 0o700, dir: true, uid: nonroot},
		"tmp/":                              {mode: 0o1777, dir: true},
		"LICENSE":                           {mode: 0o644, data: shared["LICENSE"]},
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := files[n]
		h := &tar.Header{Name: n, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: created, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeArchive writes idx as an OCI image layout whose index.json names it
// (org.opencontainers.image.ref.name, and containerd's own annotation,
// which `ctr images import` reads first), and tars the layout into out.
func writeArchive(out string, idx v1.ImageIndex, name string) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".ociimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": name,
		"io.containerd.image.name":          name,
	})); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := tarDir(f, dir); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// tarDir writes dir's files into w in path order with fixed owners, modes
// and times: the archive, like the image, is the same from the same input.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
