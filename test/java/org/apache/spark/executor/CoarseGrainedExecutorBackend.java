package org.apache.spark.executor;

/** Stand-in with Spark's executor main class name; see standin.Worker. */
public final class CoarseGrainedExecutorBackend {
    public static void main(String[] args) throws Exception {
        standin.Worker.run(args);
    }
}
