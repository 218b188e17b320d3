package dev.redlease.interop;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import org.redisson.client.RedisException;

/**
 * The protocol's output: one line per response on the real stdout, written
 * whole and flushed, whichever owner thread finishes.
 *
 * <p>System.out itself is pointed at stderr, so that nothing a library might
 * print can break a protocol line.
 */
final class Replies {
    /** What an op returns when its Redisson call is void: printed as "-". */
    static final Object VOID = new Object();

    private static final PrintStream OUT = new PrintStream(
            new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 14),
            false, StandardCharsets.UTF_8);

    private Replies() {}

    /** Called first thing in main, before any library can touch System.out. */
    static void claimStdout() {
        System.setOut(System.err);
    }

    /**
     * Wall-clock Unix time in microseconds. Instant.now() has µs precision on
     * Linux, and the tests compare these stamps with the Rust side's clock.
     */
    static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    static synchronized void line(String text) {
        OUT.print(text);
        OUT.print('\n');
        OUT.flush();
    }

    static void ok(String id, long startUs, long endUs, Object value) {
        line(id + " ok " + startUs + " " + endUs + " " + format(value));
    }

    static void err(String id, long startUs, long endUs, String errorClass, String message) {
        line(id + " err " + startUs + " " + endUs + " " + errorClass + " " + oneLine(message));
    }

    static void err(String id, long startUs, long endUs, Throwable t) {
        err(id, startUs, endUs, errorClass(t), errorMessage(t));
    }

    static String format(Object value) {
        if (value == VOID) {
            return "-";
        }
        if (value == null) {
            return "null";
        }
        return value.toString();
    }

    /**
     * "Outer/RootCause" when a wrapper carries a cause (Redisson's sync calls
     * wrap anything that is not a Redis error in a RedisException, e.g.
     * RPermitExpirableSemaphore.release's IllegalArgumentException), else the
     * simple class name.
     */
    static String errorClass(Throwable t) {
        Throwable root = wrappedRoot(t);
        String outer = t.getClass().getSimpleName();
        return root == null ? outer : outer + "/" + root.getClass().getSimpleName();
    }

    /** The root cause's message when there is one (the wrapper's says little), else the exception's own. */
    static String errorMessage(Throwable t) {
        Throwable root = wrappedRoot(t);
        if (root != null && root.getMessage() != null) {
            return root.getMessage();
        }
        return t.getMessage() == null ? "" : t.getMessage();
    }

    /** The innermost cause of a wrapper exception, or null if t is not a wrapper or wraps nothing. */
    private static Throwable wrappedRoot(Throwable t) {
        boolean wrapper = t instanceof RedisException
                || t instanceof CompletionException
                || t instanceof ExecutionException;
        if (!wrapper || t.getCause() == null || t.getCause() == t) {
            return null;
        }
        Throwable root = t.getCause();
        // Bounded, in case of a cause cycle.
        for (int i = 0; i < 100 && root.getCause() != null && root.getCause() != root; i++) {
            root = root.getCause();
        }
        return root;
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.replace("\r\n", " ").replace('\n', ' ').replace('\r', ' ');
    }
}
