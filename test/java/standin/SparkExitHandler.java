package standin;

/**
 * What Spark's SparkUncaughtExceptionHandler does when an executor runs out
 * of heap: an OutOfMemoryError that reaches it ends the JVM with
 * System.exit(52) (SparkExitCode.OOM), an orderly exit that runs the
 * shutdown hooks; any other uncaught throwable exits with 50.
 */
public final class SparkExitHandler implements Thread.UncaughtExceptionHandler {
    public static final int OOM = 52;
    public static final int UNCAUGHT_EXCEPTION = 50;

    static void install() {
        Thread.setDefaultUncaughtExceptionHandler(new SparkExitHandler());
    }

    @Override
    public void uncaughtException(Thread thread, Throwable e) {
        System.exit(e instanceof OutOfMemoryError ? OOM : UNCAUGHT_EXCEPTION);
    }

    private SparkExitHandler() {}
}
