package org.apache.spark.deploy;

/** Stand-in with Spark's driver main class name; see standin.Worker. */
public final class SparkSubmit {
    public static void main(String[] args) throws Exception {
        standin.Worker.run(args);
    }
}
