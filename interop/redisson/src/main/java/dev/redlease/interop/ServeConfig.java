package dev.redlease.interop;

import java.util.Arrays;
import java.util.Locale;

import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.ShardedSubscriptionMode;

/**
 * The flags of serve mode and the Redisson Config they make. Anything not
 * given keeps Redisson's default, as a Java service would have it.
 */
final class ServeConfig {
    static final String USAGE = "serve --url URL [--cluster | --sentinel MASTER] [--sharded auto|on|off]"
            + " [--watchdog-ms N] [--watchdog-batch N]";

    private String url;
    private boolean cluster;
    /** The master's name, for Sentinel: then url lists the Sentinels. */
    private String sentinel;
    private ShardedSubscriptionMode sharded;
    private Long watchdogMs;
    private Integer watchdogBatch;

    /** A startup error: printed on stderr, exit status 2. */
    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String why) {
            super(why, null, false, false);
        }
    }

    static ServeConfig parse(String[] args) throws UsageError {
        ServeConfig c = new ServeConfig();
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            switch (flag) {
                case "--cluster":
                    c.cluster = true;
                    break;
                case "--sentinel":
                    c.sentinel = value(args, ++i, flag);
                    break;
                case "--url":
                    c.url = value(args, ++i, flag);
                    break;
                case "--sharded":
                    String mode = value(args, ++i, flag);
                    try {
                        c.sharded = ShardedSubscriptionMode.valueOf(mode.toUpperCase(Locale.ROOT));
                    } catch (IllegalArgumentException e) {
                        throw new UsageError("--sharded takes one of "
                                + Arrays.toString(ShardedSubscriptionMode.values()).toLowerCase(Locale.ROOT)
                                + ", not " + mode);
                    }
                    break;
                case "--watchdog-ms":
                    c.watchdogMs = number(value(args, ++i, flag), flag);
                    break;
                case "--watchdog-batch":
                    long n = number(value(args, ++i, flag), flag);
                    if (n < 1 || n > Integer.MAX_VALUE) {
                        throw new UsageError("--watchdog-batch must be a positive int, not " + n);
                    }
                    c.watchdogBatch = (int) n;
                    break;
                default:
                    throw new UsageError("unknown argument: " + flag);
            }
        }
        if (c.url == null) {
            throw new UsageError("--url is required");
        }
        if (c.sharded != null && !c.cluster) {
            throw new UsageError("--sharded needs --cluster (Redisson probes sharded pub/sub only in cluster mode)");
        }
        if (c.cluster && c.sentinel != null) {
            throw new UsageError("--cluster and --sentinel exclude each other");
        }
        if (!c.cluster && c.sentinel == null && c.url.contains(",")) {
            throw new UsageError("several URLs need --cluster or --sentinel: " + c.url);
        }
        return c;
    }

    Config toConfig() {
        Config cfg = new Config();
        if (cluster) {
            ClusterServersConfig cc = cfg.useClusterServers();
            cc.addNodeAddress(url.split(","));
            if (sharded != null) {
                cc.setShardedSubscriptionMode(sharded);
            }
        } else if (sentinel != null) {
            cfg.useSentinelServers().setMasterName(sentinel).addSentinelAddress(url.split(","));
        } else {
            cfg.useSingleServer().setAddress(url);
        }
        if (watchdogMs != null) {
            cfg.setLockWatchdogTimeout(watchdogMs);
        }
        if (watchdogBatch != null) {
            cfg.setLockWatchdogBatchSize(watchdogBatch);
        }
        return cfg;
    }

    private static String value(String[] args, int i, String flag) throws UsageError {
        if (i >= args.length) {
            throw new UsageError(flag + " needs a value");
        }
        return args[i];
    }

    private static long number(String s, String flag) throws UsageError {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new UsageError(flag + " takes an integer, not " + s);
        }
    }
}
