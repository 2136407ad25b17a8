// Alloc is the test JVM for internal/hsperf: it allocates enough to run
// young and full collections, then keeps data in every space (old gen,
// survivors, eden) and waits to be killed, so that its hsperfdata file stays
// still while the tests read it and run jstat.
import java.util.ArrayList;
import java.util.List;

public class Alloc {
    static final List<byte[]> live = new ArrayList<>();
    static final List<byte[]> young = new ArrayList<>();

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
        System.gc(); // a full collection: the old gen holds "live"
        // Young collections after the full one leave survivors behind; the
        // last allocations stay in eden.
        for (int i = 0; i < 1500; i++) {
            byte[] b = new byte[32 * 1024];
            sink += b[0];
            if (i % 25 == 0) {
                young.add(new byte[32 * 1024]);
            }
        }
        System.out.println("ready " + sink + " " + live.size() + " " + young.size());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
