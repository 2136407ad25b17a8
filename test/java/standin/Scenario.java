package standin;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A Spark executor's memory over time, for the alert scenarios
 * (test/e2e/scenarios_test.go): a live data set that the heap keeps,
 * garbage churn, and leaks of heap, direct buffers or a Python worker that
 * start after a delay and grow at a steady rate. Sizes are MiB, rates MiB
 * per second (fractions allowed).
 *
 *   --live-mb N           live data reached at --ramp-mb-s (default 32)
 *   --churn-mb-s R        short-lived garbage allocated per second
 *   --leak-after-s S      seconds before the leaks below start
 *   --heap-leak-mb-s R    live data grows by R after that
 *   --direct-leak-mb-s R  direct buffers grow by R after that
 *   --python-mb N         a python3 child (a PySpark worker) holding N
 *   --python-leak-mb-s R  ... growing by R after --leak-after-s
 *   --exit-after-s N      exit by itself after N seconds
 *   --spike-mb N          once, N MiB of direct buffers touched ...
 *   --spike-after-s S     ... S seconds after the start ...
 *   --spike-for-s D       ... and freed D seconds later (default 1)
 *   --page-cache-mb N     a file of N MiB written to --page-cache-file (on a disk, not
 *                         tmpfs) and read again and again: page cache charged to the
 *                         container, none of it the JVM's
 *   --page-cache-read-mb-s R  ... read at R MiB/s (default 64)
 *
 * Like Spark's executor, it exits with code 52 on OutOfMemoryError.
 */
public final class Scenario {
    private static final int MIB = 1 << 20;
    private static final List<Object> retained = new ArrayList<>();
    private static long sink;

    public static void run(String[] args) throws Exception {
        double liveMb = 0, rampMbS = 32, churnMbS = 0, leakAfterS = 0;
        double heapLeak = 0, directLeak = 0, pythonMb = 0, pythonLeak = 0;
        long exitAfterS = 600;
        double spikeMb = 0, spikeAfterS = 0, spikeForS = 1;
        double pageCacheMb = 0, pageCacheReadMbS = 64;
        String pageCacheFile = null;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--live-mb": liveMb = Double.parseDouble(args[++i]); break;
                case "--ramp-mb-s": rampMbS = Double.parseDouble(args[++i]); break;
                case "--churn-mb-s": churnMbS = Double.parseDouble(args[++i]); break;
                case "--leak-after-s": leakAfterS = Double.parseDouble(args[++i]); break;
                case "--heap-leak-mb-s": heapLeak = Double.parseDouble(args[++i]); break;
                case "--direct-leak-mb-s": directLeak = Double.parseDouble(args[++i]); break;
                case "--python-mb": pythonMb = Double.parseDouble(args[++i]); break;
                case "--python-leak-mb-s": pythonLeak = Double.parseDouble(args[++i]); break;
                case "--exit-after-s": exitAfterS = Long.parseLong(args[++i]); break;
                case "--spike-mb": spikeMb = Double.parseDouble(args[++i]); break;
                case "--spike-after-s": spikeAfterS = Double.parseDouble(args[++i]); break;
                case "--spike-for-s": spikeForS = Double.parseDouble(args[++i]); break;
                case "--page-cache-mb": pageCacheMb = Double.parseDouble(args[++i]); break;
                case "--page-cache-file": pageCacheFile = args[++i]; break;
                case "--page-cache-read-mb-s": pageCacheReadMbS = Double.parseDouble(args[++i]); break;
                default: break;
            }
        }
        Process python = null;
        if (pythonMb > 0 || pythonLeak > 0) {
            python = startPython(pythonMb, leakAfterS, pythonLeak, exitAfterS);
        }
        if (spikeMb > 0) spike(spikeMb, spikeAfterS, spikeForS);
        if (pageCacheMb > 0) pageCache(pageCacheFile, pageCacheMb, pageCacheReadMbS);
        System.out.println("ready pid=" + ProcessHandle.current().pid());
        System.out.flush();
        try {
            loop(liveMb, rampMbS, churnMbS, leakAfterS, heapLeak, directLeak, exitAfterS);
        } catch (OutOfMemoryError e) {
            retained.clear();
            System.err.println("java.lang.OutOfMemoryError: " + e.getMessage());
            if (python != null) python.destroyForcibly();
            Runtime.getRuntime().halt(52);
        }
        if (python != null) python.destroyForcibly();
        System.exit(0);
    }

    private static void loop(double liveMb, double rampMbS, double churnMbS, double leakAfterS,
            double heapLeak, double directLeak, long exitAfterS) throws InterruptedException {
        final long start = System.nanoTime();
        final long tickMs = 100;
        double heapDone = 0, directDone = 0, churnDebt = 0;
        while (true) {
            double t = (System.nanoTime() - start) / 1e9;
            if (t > exitAfterS) return;
            double leakT = Math.max(0, t - leakAfterS);
            double heapWant = Math.min(liveMb, rampMbS * t) + heapLeak * leakT;
            // Arrays a little under 64 KiB, so that 16 with their headers
            // fill a 1 MiB G1 region: G1 keeps an object whole in a region
            // (and one of half a region or more as a humongous object in
            // regions of its own), so larger arrays would waste regions.
            while (heapDone + 1.0 / 16 <= heapWant) {
                byte[] chunk = new byte[MIB / 16 - 64];
                for (int k = 0; k < chunk.length; k += 4096) chunk[k] = 1;
                retained.add(chunk);
                heapDone += 1.0 / 16;
            }
            double directWant = directLeak * leakT;
            while (directDone + 0.0625 <= directWant) {
                ByteBuffer buf = ByteBuffer.allocateDirect(MIB / 16);
                for (int k = 0; k < buf.capacity(); k += 4096) buf.put(k, (byte) 1);
                retained.add(buf);
                directDone += 0.0625;
            }
            churnDebt += churnMbS * tickMs / 1000.0 * 16;
            for (; churnDebt >= 1; churnDebt--) {
                byte[] garbage = new byte[MIB / 16];
                garbage[(int) (churnDebt) % garbage.length] = 1;
                sink += garbage.length;
            }
            Thread.sleep(tickMs);
        }
    }

    /** A short burst of native memory, as a shuffle or a broadcast makes, freed again. */
    private static void spike(double mb, double afterS, double forS) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep((long) (afterS * 1000));
                List<ByteBuffer> held = new ArrayList<>();
                for (int i = 0; i < (int) mb; i++) {
                    ByteBuffer buf = ByteBuffer.allocateDirect(MIB);
                    for (int k = 0; k < buf.capacity(); k += 4096) buf.put(k, (byte) 1);
                    held.add(buf);
                }
                System.out.println("spike " + (int) mb);
                System.out.flush();
                Thread.sleep((long) (forS * 1000));
                held.clear();
                System.gc(); // direct buffers are freed when collected
                System.out.println("spike over");
                System.out.flush();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "spike");
        t.setDaemon(true);
        t.start();
    }

    /** Page cache: a file written once, then read over and over at readMbS
     *  (a shuffle or a Parquet scan reading its files again), from a thread
     *  of its own. The pages are charged to the container and kept active
     *  by the re-reads; the kernel reclaims them when the container needs
     *  memory. */
    private static void pageCache(String path, double mb, double readMbS) throws Exception {
        if (path == null) throw new IllegalArgumentException("--page-cache-mb needs --page-cache-file");
        byte[] buf = new byte[MIB];
        java.util.Arrays.fill(buf, (byte) 1);
        try (java.io.FileOutputStream out = new java.io.FileOutputStream(path)) {
            for (int i = 0; i < (int) mb; i++) out.write(buf);
        }
        Thread t = new Thread(() -> {
            byte[] in = new byte[MIB];
            long start = System.nanoTime();
            double read = 0;
            try {
                while (true) {
                    try (java.io.FileInputStream f = new java.io.FileInputStream(path)) {
                        int n;
                        while ((n = f.read(in)) > 0) {
                            read += n / (double) MIB;
                            long due = start + (long) (read / readMbS * 1e9);
                            long wait = due - System.nanoTime();
                            if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                        }
                    }
                }
            } catch (Exception e) {
                System.err.println("page cache: " + e);
            }
        }, "page-cache");
        t.setDaemon(true);
        t.start();
    }

    /** A PySpark worker stand-in: holds mb MiB, then grows by leak MiB/s after delay seconds. */
    private static Process startPython(double mb, double delay, double leak, long exitAfterS) throws Exception {
        String code = String.join("\n",
            "import time",
            "held = []",
            "def hold(n):",
            "    b = bytearray(int(n * 1048576))",
            "    for i in range(0, len(b), 4096): b[i] = 1",
            "    held.append(b)",
            "hold(" + mb + ")",
            "start = time.time()",
            "done = 0.0",
            "while time.time() - start < " + exitAfterS + ":",
            "    want = max(0.0, time.time() - start - " + delay + ") * " + leak,
            "    if want - done >= 0.25:",
            "        hold(want - done)",
            "        done = want",
            "    time.sleep(0.1)",
            "");
        return new ProcessBuilder("python3", "-c", code).inheritIO().start();
    }

    private Scenario() {}
}
