package org.apache.spark.executor;

/**
 * Stand-in with Spark's executor main class name; see standin.Worker, or
 * standin.Scenario when the first argument is --scenario.
 */
public final class CoarseGrainedExecutorBackend {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--scenario")) {
            standin.Scenario.run(args);
            return;
        }
        standin.Worker.run(args);
    }
}
