package standin;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A stand-in for a Spark executor's memory behaviour, driven by flags, so
 * tests can make a real JVM fill its heap, fill native memory, or spawn a
 * PySpark-like Python child. Spark's own flags (--executor-id, --app-id, ...)
 * are accepted and ignored: the exporter reads them from the command line.
 *
 *   --heap-mb N        keep N MiB of byte[] reachable (grown at --step-mb per --step-ms)
 *   --churn            keep allocating garbage so collections happen
 *   --direct-mb N      allocate N MiB of direct ByteBuffers (native memory)
 *   --python-child     start `python3` that sleeps, as a PySpark worker would
 *   --python-mb N      ... and make it hold N MiB
 *   --exit-after-s N   exit by itself after N seconds (a safety net for tests)
 *   --spark-exit       exit as a Spark executor does on an uncaught error: 52 for an
 *                      OutOfMemoryError (see SparkExitHandler); with --heap-mb beyond
 *                      -Xmx that is how the stand-in ends
 *   --free-on-oome     on OutOfMemoryError, drop what it holds and collect before the
 *                      error reaches the handler, as a task's data goes when its stack
 *                      unwinds: the heap is empty at the end
 */
public final class Worker {
    private static final List<Object> retained = new ArrayList<>();

    public static void run(String[] args) throws Exception {
        long heapMb = 0, directMb = 0, pythonMb = 0, stepMb = 8, stepMs = 50, exitAfterS = 600;
        boolean churn = false, python = false, freeOnOOME = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--heap-mb": heapMb = Long.parseLong(args[++i]); break;
                case "--direct-mb": directMb = Long.parseLong(args[++i]); break;
                case "--python-mb": pythonMb = Long.parseLong(args[++i]); python = true; break;
                case "--step-mb": stepMb = Long.parseLong(args[++i]); break;
                case "--step-ms": stepMs = Long.parseLong(args[++i]); break;
                case "--exit-after-s": exitAfterS = Long.parseLong(args[++i]); break;
                case "--churn": churn = true; break;
                case "--python-child": python = true; break;
                case "--spark-exit": SparkExitHandler.install(); break;
                case "--free-on-oome": freeOnOOME = true; break;
                default: break;
            }
        }
        final long deadline = System.currentTimeMillis() + exitAfterS * 1000;
        Process child = null;
        if (python) {
            String code = "import time\n"
                + "b = bytearray(" + (pythonMb << 20) + ")\n"
                + "for i in range(0, len(b), 4096): b[i] = 1\n"
                + "time.sleep(" + exitAfterS + ")\n";
            child = new ProcessBuilder("python3", "-c", code).inheritIO().start();
        }
        System.out.println("ready pid=" + ProcessHandle.current().pid());
        System.out.flush();

        try {
            grow(heapMb, directMb, stepMb, stepMs, churn, deadline);
        } catch (OutOfMemoryError e) {
            if (freeOnOOME) {
                retained.clear();
                System.gc();
            }
            throw e;
        }
        if (child != null) child.destroyForcibly();
        System.exit(0);
    }

    private static void grow(long heapMb, long directMb, long stepMb, long stepMs, boolean churn, long deadline)
            throws InterruptedException {
        long heapDone = 0, directDone = 0;
        while (System.currentTimeMillis() < deadline) {
            if (heapDone < heapMb) {
                long n = Math.min(stepMb, heapMb - heapDone);
                for (long j = 0; j < n; j++) {
                    byte[] chunk = new byte[1 << 20];
                    for (int k = 0; k < chunk.length; k += 4096) chunk[k] = 1;
                    retained.add(chunk);
                }
                heapDone += n;
            } else if (directDone < directMb) {
                long n = Math.min(stepMb, directMb - directDone);
                for (long j = 0; j < n; j++) {
                    ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
                    for (int k = 0; k < buf.capacity(); k += 4096) buf.put(k, (byte) 1);
                    retained.add(buf);
                }
                directDone += n;
            }
            if (churn) {
                for (int j = 0; j < 64; j++) {
                    byte[] garbage = new byte[64 << 10];
                    garbage[j] = 1;
                }
            }
            Thread.sleep(stepMs);
        }
    }

    private Worker() {}
}
