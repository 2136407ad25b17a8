// Alloc is the test JVM for internal/hsperf: it allocates enough to run a
// few collections, keeps a little live data, then waits to be killed so that
// its hsperfdata file stays still while the tests read it and run jstat.
import java.util.ArrayList;
import java.util.List;

public class Alloc {
    static final List<byte[]> live = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        long sink = 0;
        for (int i = 0; i < 4000; i++) {
            byte[] b = new byte[64 * 1024];
            b[i % b.length] = (byte) i;
            sink += b[0];
            if (i % 200 == 0) {
                live.add(new byte[256 * 1024]);
            }
        }
        System.gc();
        System.out.println("ready " + sink + " " + live.size());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
