package standin;

/** A plain, non-Spark JVM with the same knobs as Worker. */
public final class Idle {
    public static void main(String[] args) throws Exception {
        Worker.run(args);
    }
}
