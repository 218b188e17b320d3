package dev.redlease.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;

/**
 * A real RedissonClient driven over stdin/stdout, for redlease's interop
 * tests and benchmark (see README.md for the protocol).
 *
 * <pre>
 *   serve --url URL [--cluster] [--sharded auto|on|off] [--watchdog-ms N] [--watchdog-batch N]
 *   uncontended URL THREADS SECONDS
 *   uncontended-fenced URL THREADS SECONDS
 * </pre>
 */
public final class Driver {
    private static final String NAME = "redisson-driver";

    private Driver() {}

    public static void main(String[] args) {
        // Before anything can log or print: slf4j-simple reads its settings
        // when the first logger is made, and stdout must carry only replies.
        setUpLogging();
        Replies.claimStdout();
        if (args.length == 0) {
            fail(2, "usage: " + ServeConfig.USAGE + "\n   or: " + Bench.USAGE);
        }
        String mode = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (mode) {
            case "serve":
                serve(rest);
                break;
            case "uncontended":
                Bench.run(rest, false);
                break;
            case "uncontended-fenced":
                Bench.run(rest, true);
                break;
            default:
                fail(2, "unknown mode " + mode + "; usage: " + ServeConfig.USAGE + "\n   or: " + Bench.USAGE);
        }
    }

    /**
     * Redisson's own warnings and errors are part of what the tests observe
     * (e.g. "Unable to decode data" when a peer publishes a non-number), so
     * they go to stderr with the thread that logged them; so does anything
     * that escapes a thread, such as an exception in a pub/sub handler on
     * Redisson's executor. A -D in REDLEASE_JAVA_OPTS wins over these.
     */
    private static void setUpLogging() {
        System.getProperties().putIfAbsent("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.getProperties().putIfAbsent("org.slf4j.simpleLogger.showThreadName", "true");
        System.getProperties().putIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
        System.getProperties().putIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        System.getProperties().putIfAbsent("org.slf4j.simpleLogger.logFile", "System.err");
        Thread.setDefaultUncaughtExceptionHandler((thread, e) -> {
            synchronized (System.err) {
                System.err.println("uncaught " + thread.getName() + " " + e);
                e.printStackTrace(System.err);
                System.err.flush();
            }
        });
    }

    static void fail(int status, String message) {
        System.err.println(NAME + ": " + message);
        System.err.flush();
        System.exit(status);
    }

    private static void serve(String[] args) {
        ServeConfig config;
        try {
            config = ServeConfig.parse(args);
        } catch (ServeConfig.UsageError e) {
            fail(2, e.getMessage() + "\nusage: " + ServeConfig.USAGE);
            return;
        }
        RedissonClient redisson;
        try {
            redisson = Redisson.create(config.toConfig());
        } catch (Throwable t) {
            t.printStackTrace(System.err);
            fail(1, "cannot start the Redisson client: " + t);
            return;
        }
        Ops ops = new Ops(redisson);
        Owners owners = new Owners();
        Replies.line("ready " + redisson.getId() + " " + Compat.version());

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (true) {
            String line;
            try {
                line = in.readLine();
            } catch (IOException e) {
                System.err.println(NAME + ": reading stdin: " + e);
                line = null;
            }
            if (line == null) {
                // EOF: the test is gone or done; as shutdown, without a reply.
                shutdownAndExit(redisson);
                return;
            }
            try {
                handle(line, redisson, ops, owners);
            } catch (Throwable t) {
                // Never let one request end the program.
                Replies.err("-", 0, 0, t);
            }
        }
    }

    /** One request line: "<id> <owner> <op> [args...]". */
    private static void handle(String line, RedissonClient redisson, Ops ops, Owners owners) {
        String trimmed = line.strip();
        String[] tokens = trimmed.isEmpty() ? new String[0] : trimmed.split("\\s+");
        if (tokens.length < 3) {
            String id = tokens.length == 0 ? "-" : tokens[0];
            Replies.err(id, 0, 0, "BadRequest", "expected <id> <owner> <op> [args...], got: " + trimmed);
            return;
        }
        String id = tokens[0];
        String owner = tokens[1];
        Args args = new Args(tokens[2], Arrays.copyOfRange(tokens, 3, tokens.length));
        try {
            switch (args.op()) {
                // The two control ops act at once, on this thread, rather than
                // queue behind their owner: an owner may be blocked, and these
                // are how a test ends blocked calls and the process.
                case "interrupt": {
                    args.expect(1, "<owner>");
                    long start = Replies.nowMicros();
                    boolean known = owners.interrupt(args.str(0));
                    long end = Replies.nowMicros();
                    if (!known) {
                        throw new Args.BadRequest("unknown owner: " + args.str(0));
                    }
                    Replies.ok(id, start, end, Replies.VOID);
                    return;
                }
                case "shutdown": {
                    args.expect(0, "");
                    long now = Replies.nowMicros();
                    Replies.ok(id, now, now, Replies.VOID);
                    shutdownAndExit(redisson);
                    return;
                }
                default:
                    owners.submit(owner, id, ops.prepare(args));
            }
        } catch (Args.BadRequest e) {
            Replies.err(id, 0, 0, "BadRequest", e.getMessage());
        } catch (Args.Unsupported e) {
            Replies.err(id, 0, 0, "Unsupported", e.getMessage());
        } catch (RuntimeException e) {
            Replies.err(id, 0, 0, e);
        }
    }

    /**
     * Shuts the client down and exits 0 without waiting for owners blocked in
     * calls that shutdown does not end (they are daemons). shutdown() itself
     * does not release locks, as a dying Java service would not. A guard
     * halts the JVM if shutdown stalls.
     */
    static void shutdownAndExit(RedissonClient redisson) {
        Thread guard = new Thread(() -> {
            try {
                Thread.sleep(5_000);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println(NAME + ": Redisson shutdown took over 5 s; halting");
            Runtime.getRuntime().halt(0);
        }, "exit-guard");
        guard.setDaemon(true);
        guard.start();
        try {
            redisson.shutdown();
        } catch (Throwable t) {
            System.err.println(NAME + ": shutdown: " + t);
        }
        System.exit(0);
    }
}
