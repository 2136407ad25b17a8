package standin;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * One kind of native memory leak, for the region breakdown's truth test
 * (internal/nativemem): the JVM prints "ready pid=<pid>", waits for a
 * signal (or a delay), leaks one kind of memory up to a target, prints
 * "leaked" and holds it until it is killed (or --exit-after-s passes).
 *
 *   --kind K            direct-large  4 MiB direct buffers: glibc mmaps each on its own
 *                       direct-small  64 KiB direct buffers from --workers threads: malloc arenas
 *                       threads       --threads sleeping threads, each with --stack-kb of stack in use
 *                       classes       classes with --methods methods of --code-bytes of bytecode
 *                                     each, one class loader per class: metaspace
 *                       mapped        --file mapped READ_WRITE, every page written
 *                       shm           --file (under /dev/shm) written with write(2), never mapped
 *   --target-mb N       how much to leak (default 200); for classes, metaspace
 *   --threads N         threads for --kind threads (default 1500)
 *   --stack-kb N        stack each of them keeps in use (default 128)
 *   --workers N         threads allocating for direct-small (default 8)
 *   --file P            the file for mapped and shm
 *   --on-signal NAME    start leaking on this signal (e.g. USR1) ...
 *   --after-s S         ... or after S seconds (default 0: at once)
 *   --exit-after-s N    exit by itself after N seconds (default 600)
 *   --rate-mb-s R       leak at R MiB/s in steps of --step-mb (default 8; for threads,
 *                       step / --stack-kb threads a step; mapped and shm, a file a step)
 *                       instead of all at once: a leak that a container's limit ends
 */
public final class Leak {
    private static final int MIB = 1 << 20;
    private static final List<Object> retained = Collections.synchronizedList(new ArrayList<>());

    public static void main(String[] args) throws Exception {
        String kind = "", file = null, signal = null;
        long targetMb = 200, exitAfterS = 600;
        int threads = 1500, stackKb = 128, workers = 8, methods = 16, codeBytes = 8000;
        double afterS = 0, rateMbS = 0, stepMb = 8;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--kind": kind = args[++i]; break;
                case "--target-mb": targetMb = Long.parseLong(args[++i]); break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--stack-kb": stackKb = Integer.parseInt(args[++i]); break;
                case "--workers": workers = Integer.parseInt(args[++i]); break;
                case "--methods": methods = Integer.parseInt(args[++i]); break;
                case "--code-bytes": codeBytes = Integer.parseInt(args[++i]); break;
                case "--file": file = args[++i]; break;
                case "--on-signal": signal = args[++i]; break;
                case "--after-s": afterS = Double.parseDouble(args[++i]); break;
                case "--exit-after-s": exitAfterS = Long.parseLong(args[++i]); break;
                case "--rate-mb-s": rateMbS = Double.parseDouble(args[++i]); break;
                case "--step-mb": stepMb = Double.parseDouble(args[++i]); break;
                case "--leak": break; // how the executor stand-in hands over
                case "--executor-id": case "--app-id": i++; break; // Spark's, for the identity
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        final long deadline = System.nanoTime() + exitAfterS * 1_000_000_000L;
        CountDownLatch go = new CountDownLatch(1);
        if (signal != null) {
            sun.misc.Signal.handle(new sun.misc.Signal(signal), s -> go.countDown());
        }
        System.out.println("ready pid=" + ProcessHandle.current().pid());
        System.out.flush();
        if (signal != null) {
            go.await();
        } else if (afterS > 0) {
            Thread.sleep((long) (afterS * 1000));
        }
        long bytes = targetMb * MIB;
        if (rateMbS <= 0) {
            leak(kind, bytes, 0, threads, stackKb, workers, methods, codeBytes, file);
        } else {
            // In steps of stepMb at rateMbS, until the target (or a kill).
            long step = (long) (stepMb * MIB), start = System.nanoTime();
            for (int i = 0; (long) i * step < bytes; i++) {
                int n = (int) Math.max(1, step / ((long) stackKb << 10));
                leak(kind, step, i, n, stackKb, workers, methods, codeBytes, file);
                long due = start + (long) ((i + 1) * stepMb / rateMbS * 1e9);
                long wait = due - System.nanoTime();
                if (wait > 0) Thread.sleep(wait / 1_000_000);
            }
        }
        System.out.println("leaked");
        System.out.flush();
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            Thread.sleep(Math.max(1, Math.min(left / 1_000_000, 60_000)));
        }
        System.exit(0);
    }

    /** Leaks bytes of kind; step numbers the files of mapped and shm steps. */
    private static void leak(String kind, long bytes, int step, int threads, int stackKb, int workers,
            int methods, int codeBytes, String file) throws Exception {
        String stepFile = file == null || step == 0 ? file : file + "." + step;
        switch (kind) {
            case "direct-large": direct(bytes, 4 * MIB, 1); break;
            case "direct-small": direct(bytes, 64 << 10, workers); break;
            case "threads": threads(threads, stackKb); break;
            case "classes": classes(bytes, methods, codeBytes); break;
            case "mapped": mapped(stepFile, bytes); break;
            case "shm": shm(stepFile, bytes); break;
            default: throw new IllegalArgumentException("unknown --kind " + kind);
        }
    }

    /** Direct buffers of size bytes, allocated by n threads, every page written. */
    private static void direct(long total, int size, int n) throws InterruptedException {
        long each = total / size / n;
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < n; t++) {
            Thread th = new Thread(() -> {
                for (long i = 0; i < each; i++) {
                    ByteBuffer b = ByteBuffer.allocateDirect(size);
                    for (int k = 0; k < size; k += 4096) b.put(k, (byte) 1);
                    retained.add(b);
                }
            });
            th.start();
            ts.add(th);
        }
        for (Thread th : ts) th.join();
    }

    /** n threads that each put stackKb of frames on their stack and sleep at the bottom. */
    private static void threads(int n, int stackKb) throws InterruptedException {
        CountDownLatch deep = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(() -> {
                descend(stackKb << 10, deep);
            });
            t.setDaemon(true);
            t.start();
            retained.add(t);
        }
        deep.await();
    }

    /** Recurses, counting 128 bytes a frame, until bytes are counted, and
     *  sleeps at the bottom: what stays resident is about that (interpreted
     *  frames are larger, compiled ones smaller); the tests measure it. */
    private static long descend(int bytes, CountDownLatch deep) {
        if (bytes <= 0) {
            deep.countDown();
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return 0;
        }
        long a = bytes, b = a * 3, c = b ^ a, d = c + 7, e = d * a;
        return descend(bytes - 128, deep) + a + b + c + d + e;
    }

    /** Classes, each in its own loader, until about total bytes of metadata.
     *  One class file is built and its name patched for each class (the
     *  names have the same length), so that the heap holds little more
     *  than the loaders. */
    private static void classes(long total, int methods, int codeBytes) {
        long perClass = (long) methods * (codeBytes + 128) + 1024;
        long n = total / perClass;
        String template = "standin/gen/C00000000";
        byte[] b = ClassBytes.make(template, methods, codeBytes);
        int at = indexOf(b, template.getBytes(java.nio.charset.StandardCharsets.UTF_8)) + template.length() - 8;
        for (long i = 0; i < n; i++) {
            String digits = String.format("%08d", i);
            for (int k = 0; k < 8; k++) b[at + k] = (byte) digits.charAt(k);
            OneClassLoader l = new OneClassLoader();
            retained.add(l.define(template.substring(0, template.length() - 8).replace('/', '.') + digits, b));
        }
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int k = 0; k < needle.length; k++) {
                if (hay[i + k] != needle[k]) continue outer;
            }
            return i;
        }
        throw new IllegalStateException("class name not found in its class file");
    }

    static final class OneClassLoader extends ClassLoader {
        OneClassLoader() {
            super(Leak.class.getClassLoader());
        }

        Class<?> define(String name, byte[] b) {
            return defineClass(name, b, 0, b.length);
        }
    }

    /** A minimal class-file writer: public class <name> with static void
     *  methods m0..m<n-1> (the same names in every class, so the symbol table
     *  does not grow with them), each iconst_0/pop repeated, then return. */
    static final class ClassBytes {
        static byte[] make(String name, int methods, int codeBytes) {
            Buf b = new Buf();
            b.u4(0xCAFEBABE);
            b.u2(0);  // minor
            b.u2(49); // major: Java 5, no StackMapTable needed
            // constant pool: 1 this Utf8, 2 this Class, 3 Object Utf8, 4 Object Class,
            // 5 "Code", 6 "()V", 7.. method names
            b.u2(7 + methods);
            b.utf8(name);
            b.u1(7); b.u2(1);
            b.utf8("java/lang/Object");
            b.u1(7); b.u2(3);
            b.utf8("Code");
            b.utf8("()V");
            for (int m = 0; m < methods; m++) b.utf8("m" + m);
            b.u2(0x0001 | 0x0020); // public super
            b.u2(2);
            b.u2(4);
            b.u2(0); // interfaces
            b.u2(0); // fields
            b.u2(methods);
            int pairs = Math.max(0, (codeBytes - 1) / 2);
            int len = pairs * 2 + 1;
            for (int m = 0; m < methods; m++) {
                b.u2(0x0001 | 0x0008); // public static
                b.u2(7 + m);
                b.u2(6);
                b.u2(1); // attributes: Code
                b.u2(5);
                b.u4(12 + len);
                b.u2(1); // max_stack
                b.u2(0); // max_locals
                b.u4(len);
                for (int k = 0; k < pairs; k++) {
                    b.u1(0x03); // iconst_0
                    b.u1(0x57); // pop
                }
                b.u1(0xB1); // return
                b.u2(0); // exception table
                b.u2(0); // code attributes
            }
            b.u2(0); // class attributes
            return b.bytes();
        }
    }

    static final class Buf {
        private byte[] a = new byte[1024];
        private int n;

        void u1(int v) {
            if (n == a.length) a = java.util.Arrays.copyOf(a, 2 * n);
            a[n++] = (byte) v;
        }

        void u2(int v) { u1(v >>> 8); u1(v); }

        void u4(int v) { u2(v >>> 16); u2(v); }

        void utf8(String s) {
            byte[] bs = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            u1(1);
            u2(bs.length);
            for (byte x : bs) u1(x);
        }

        byte[] bytes() { return java.util.Arrays.copyOf(a, n); }
    }

    /** Maps path (total bytes) READ_WRITE and writes every page. */
    private static void mapped(String path, long total) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(path, "rw"); FileChannel ch = f.getChannel()) {
            f.setLength(total);
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, total);
            for (int k = 0; k < total; k += 4096) m.put(k, (byte) 1);
            retained.add(m);
        }
    }

    /** Writes total bytes to path with write(2): tmpfs pages the JVM never maps. */
    private static void shm(String path, long total) throws IOException {
        byte[] buf = new byte[64 << 10];
        java.util.Arrays.fill(buf, (byte) 1);
        try (FileOutputStream out = new FileOutputStream(path)) {
            for (long done = 0; done < total; done += buf.length) out.write(buf);
        }
    }
}
