package org.apache.spark.executor;

/**
 * Stand-in with Spark's executor main class name; see standin.Worker, or
 * standin.Scenario when the first argument is --scenario, standin.Leak when
 * it is --leak.
 */
public final class CoarseGrainedExecutorBackend {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--scenario")) {
            standin.Scenario.run(args);
            return;
        }
        if (args.length > 0 && args[0].equals("--leak")) {
            standin.Leak.main(args);
            return;
        }
        standin.Worker.run(args);
    }
}
