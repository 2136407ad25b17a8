package org.apache.spark.executor;

import java.util.ArrayList;
import java.util.List;

/**
 * Stand-in with the main class Spark's ApplicationMaster gives an executor
 * container on YARN (ExecutorRunnable): it takes YARN's arguments
 * (--driver-url, --executor-id, --hostname, --cores, --app-id,
 * --resourceProfileId, --user-class-path) and hands the stand-in's own
 * (--leak, --scenario, --heap-mb, …), wherever they stand, to
 * CoarseGrainedExecutorBackend's main with --executor-id and --app-id kept
 * for the executor's identity.
 */
public final class YarnCoarseGrainedExecutorBackend {
    public static void main(String[] args) throws Exception {
        List<String> spark = new ArrayList<>();
        List<String> own = new ArrayList<>();
        String mode = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--driver-url": case "--hostname": case "--cores": case "--resourceProfileId":
                case "--user-class-path": case "--bind-address":
                    i++; // YARN's, nothing the stand-in uses
                    break;
                case "--executor-id": case "--app-id":
                    if (i + 1 < args.length) {
                        spark.add(args[i]);
                        spark.add(args[++i]);
                    }
                    break;
                case "--leak": case "--scenario":
                    mode = args[i];
                    break;
                default:
                    own.add(args[i]);
            }
        }
        List<String> out = new ArrayList<>();
        if (mode != null) {
            out.add(mode);
        }
        out.addAll(own);
        out.addAll(spark);
        CoarseGrainedExecutorBackend.main(out.toArray(new String[0]));
    }
}
