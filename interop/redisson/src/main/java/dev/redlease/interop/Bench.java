package dev.redlease.interop;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import java.lang.management.ManagementFactory;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The benchmark's uncontended modes, driven as a Java service would use
 * Redisson: one client with its defaults, N platform threads, each locking
 * and unlocking a key of its own with one attempt and the watchdog lease.
 * Prints one JSON line: {"pairs", "seconds", "errors", "cpu_seconds"}.
 */
final class Bench {
    static final String USAGE = "uncontended|uncontended-fenced <redis-url> <threads> <seconds>";

    /** Not counted: long enough for the JIT to compile the hot path. */
    private static final long WARM_UP_MS = 2_000;

    private static final int WARMING = 0;
    private static final int TIMED = 1;
    private static final int STOPPED = 2;

    private static volatile int phase = WARMING;
    /** Failures printed on stderr before going quiet, so a broken run says why without flooding. */
    private static final AtomicInteger REPORTED = new AtomicInteger();

    private Bench() {}

    static void run(String[] args, boolean fenced) {
        if (args.length != 3) {
            Driver.fail(2, "usage: " + USAGE);
        }
        String url = args[0];
        int threads = 0;
        double seconds = 0;
        try {
            threads = Integer.parseInt(args[1]);
            seconds = Double.parseDouble(args[2]);
        } catch (NumberFormatException e) {
            Driver.fail(2, "usage: " + USAGE);
        }
        if (threads < 1 || !(seconds > 0)) {
            Driver.fail(2, "threads and seconds must be positive; usage: " + USAGE);
        }

        Config cfg = new Config();
        cfg.useSingleServer().setAddress(url);
        RedissonClient redisson = null;
        try {
            redisson = Redisson.create(cfg);
        } catch (Throwable t) {
            t.printStackTrace(System.err);
            Driver.fail(1, "cannot start the Redisson client: " + t);
        }
        long pid = ProcessHandle.current().pid();

        Worker[] workers = new Worker[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Worker(redisson, "bench:redisson:u:" + pid + ":" + i, fenced);
            workers[i].thread.start();
        }
        sleep(WARM_UP_MS);
        long cpu0 = processCpuNanos();
        long t0 = System.nanoTime();
        phase = TIMED;
        sleep((long) (seconds * 1000));
        phase = STOPPED;
        long t1 = System.nanoTime();
        long cpu1 = processCpuNanos();
        long pairs = 0;
        long errors = 0;
        for (Worker w : workers) {
            try {
                w.thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            pairs += w.pairs;
            errors += w.errors;
        }
        Replies.line(String.format(Locale.ROOT,
                "{\"pairs\": %d, \"seconds\": %.6f, \"errors\": %d, \"cpu_seconds\": %.6f}",
                pairs, (t1 - t0) / 1e9, errors, (cpu1 - cpu0) / 1e9));
        Driver.shutdownAndExit(redisson);
    }

    /** User plus system CPU time of the whole JVM, all threads, in ns. */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void report(String what, Throwable t) {
        if (REPORTED.incrementAndGet() <= 10) {
            System.err.println("bench: " + what + ": " + t);
        }
    }

    private static final class Worker {
        final Thread thread;
        /** Written by the worker's thread only; read after join. */
        long pairs;
        long errors;

        Worker(RedissonClient redisson, String key, boolean fenced) {
            thread = new Thread(() -> loop(redisson, key, fenced), "bench-" + key);
        }

        private void loop(RedissonClient redisson, String key, boolean fenced) {
            while (phase != STOPPED) {
                boolean ok = pair(redisson, key, fenced);
                // A pair counts in the window it ends in.
                if (phase == TIMED) {
                    if (ok) {
                        pairs++;
                    } else {
                        errors++;
                    }
                }
            }
        }

        /**
         * One acquire and release. The lock object is made per pair, as a
         * service handling one request at a time would call getLock. A
         * refusal counts as an error: the key is this thread's own.
         */
        private static boolean pair(RedissonClient redisson, String key, boolean fenced) {
            RLock lock;
            try {
                if (fenced) {
                    var fencedLock = redisson.getFencedLock(key);
                    lock = fencedLock;
                    // Not tryLockAndGetToken(): its wait of -1 means "for
                    // ever". A zero wait with the watchdog lease is one attempt.
                    if (fencedLock.tryLockAndGetToken(0, MILLISECONDS) == null) {
                        return false;
                    }
                } else {
                    lock = redisson.getLock(key);
                    if (!lock.tryLock()) {
                        return false;
                    }
                }
            } catch (Exception e) {
                report("acquire", e);
                return false;
            }
            try {
                lock.unlock();
                return true;
            } catch (Exception e) {
                report("release", e);
                return false;
            }
        }
    }
}
