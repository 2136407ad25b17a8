#!/bin/sh
# capture.sh: regenerate the g1-200threads fixture from a real JVM.
#
# Starts OpenJDK 17 with G1, -Xmx512m and -XX:NativeMemoryTracking=summary
# running 200 sleeping threads (the tiny program below, compiled to a temp
# dir), waits until the JVM has run a collection (HotSpot updates the
# metaspace counters in hsperfdata only at a collection; before the first
# one they read 0), and copies, in this order:
#
#   g1-200threads.smaps    /proc/<pid>/smaps
#   g1-200threads.hsperf   /tmp/hsperfdata_<user>/<pid>, trimmed to the
#                          bytes the JVM has used (the layout, through
#                          hsperf.Parse, Snapshot.Stats and nativemem.LayoutOf)
#   g1-200threads.nmt.txt  jcmd <pid> VM.native_memory summary, right after
#                          (attaching adds jcmd's Attach Listener thread: NMT
#                          sees a little more than the smaps)
#
# then regenerates the golden file of region values from them:
#
#   go test ./internal/nativemem -run TestGoldenFixture -update
#
# Captured with OpenJDK 17.0.15 (Debian 17.0.15+6-Debian-1deb12u1) on
# Linux 6.x x86-64, glibc 2.36, as root.
set -eu
cd "$(dirname "$0")"
out=g1-200threads
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

cat > "$tmp/Threads200.java" <<'JAVA'
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

public class Threads200 {
    static volatile Object sink;

    static long collections() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                    return;
                }
            }, "sleeper-" + i);
            t.setDaemon(true);
            t.start();
        }
        while (collections() == 0) {
            sink = new byte[64 << 10]; // garbage until a young collection
        }
        System.out.println("ready pid=" + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
JAVA
javac -d "$tmp" "$tmp/Threads200.java"
java -XX:+UseG1GC -Xmx512m -XX:NativeMemoryTracking=summary -cp "$tmp" Threads200 200 > "$tmp/out" &
pid=$!
i=0
until grep -q '^ready pid=' "$tmp/out"; do
    i=$((i + 1))
    [ "$i" -lt 600 ] || { echo "JVM not ready" >&2; exit 1; }
    sleep 0.1
done
# Let start-up finish (JIT, the collection's aftermath) before copying.
sleep 2

cp "/proc/$pid/smaps" "$out.smaps"
chmod 644 "$out.smaps"
cp "/tmp/hsperfdata_$(id -un)/$pid" "$tmp/hsperf"
jcmd "$pid" VM.native_memory summary > "$out.nmt.txt"
# prologue bytes 8..11: used, little-endian on x86-64
used=$(od -An -tu4 -j8 -N4 "$tmp/hsperf" | tr -d ' ')
head -c "$used" "$tmp/hsperf" > "$out.hsperf"

cd ../../..
go test ./internal/nativemem -count=1 -run TestGoldenFixture -update
