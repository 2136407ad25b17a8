package vm_test

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// initScript is the VM's /init. It loads the 9p modules, mounts the host's
// root read-only and the work directory read-write, gives the guest what
// a node has (its own /proc, /sys, /dev, tmpfs /tmp and /run, cgroup2
// with the memory controller handed down, loopback) and runs run.sh from
// the work directory in a chroot: the guest's programs are the host's
// (java, python3, the exporter, the guest test binary). When run.sh ends,
// the VM powers off; qemu's exit tells the host.
const initScript = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules/order); do insmod /modules/$m || echo "vm: insmod $m failed"; done
R=/newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288 hostroot $R || { echo "vm: cannot mount the host's root"; poweroff -f; }
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 $R/sys/fs/cgroup
echo +memory > $R/sys/fs/cgroup/cgroup.subtree_control
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
for d in tmp var/tmp; do mount -t tmpfs -o mode=1777 tmpfs $R/$d; done
mount -t tmpfs -o mode=755 tmpfs $R/run
mkdir -p $R/run/vm
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 work $R/run/vm || { echo "vm: cannot mount the work share"; poweroff -f; }
ip link set lo up
echo "vm: up: Linux $(uname -r), cgroup2 controllers: $(cat $R/sys/fs/cgroup/cgroup.subtree_control)"
chroot $R /bin/sh /run/vm/run.sh
echo "vm: run.sh ended with $?"
sync
poweroff -f
`

// buildInitramfs writes a gzipped newc cpio with a static busybox, the
// boot modules and initScript, and returns its path.
func buildInitramfs(t *testing.T, k kernel, dir string) string {
	t.Helper()
	bb := testenv.RequireTool(t, "busybox")
	if !isStatic(bb) {
		testenv.Unavailable(t, "%s is not statically linked: the initramfs has no libc (install busybox-static)", bb)
	}
	busybox, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	var c cpioWriter
	for _, d := range []string{"bin", "dev", "proc", "sys", "newroot", "modules"} {
		c.dir(d)
	}
	c.char("dev/console", 5, 1)
	c.file("bin/busybox", 0o755, busybox)
	c.file("init", 0o755, []byte(initScript))
	var order []string
	for _, m := range k.Modules {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		c.file("modules/"+filepath.Base(m), 0o644, data)
		order = append(order, filepath.Base(m))
	}
	c.file("modules/order", 0o644, []byte(strings.Join(order, "\n")+"\n"))
	c.trailer()

	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(c.buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "initramfs.cpio.gz")
	if err := os.WriteFile(out, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// isStatic says whether an ELF executable needs no dynamic loader.
func isStatic(file string) bool {
	f, err := elf.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// cpioWriter writes the "newc" format the kernel unpacks an initramfs
// from; entries need no root to be made, device nodes included.
type cpioWriter struct {
	buf bytes.Buffer
	ino int
}

func (c *cpioWriter) entry(name string, mode uint32, data []byte, rdevMajor, rdevMinor int) {
	c.ino++
	fmt.Fprintf(&c.buf, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.buf.WriteString(name)
	c.buf.WriteByte(0)
	c.pad()
	c.buf.Write(data)
	c.pad()
}

func (c *cpioWriter) pad() {
	for c.buf.Len()%4 != 0 {
		c.buf.WriteByte(0)
	}
}

func (c *cpioWriter) dir(name string)                         { c.entry(name, 0o040755, nil, 0, 0) }
func (c *cpioWriter) file(name string, perm uint32, b []byte) { c.entry(name, 0o100000|perm, b, 0, 0) }
func (c *cpioWriter) char(name string, major, minor int)      { c.entry(name, 0o020600, nil, major, minor) }
func (c *cpioWriter) trailer()                                { c.entry("TRAILER!!!", 0, nil, 0, 0) }
