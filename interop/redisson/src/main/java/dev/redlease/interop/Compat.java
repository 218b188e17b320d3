package dev.redlease.interop;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Properties;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * The Redisson APIs that not every supported version has, reached by
 * reflection so one source compiles against 4.7.0 and 3.52.0 alike.
 *
 * <p>Compiling against both showed only the non-reentrant locks (4.4.0+)
 * missing from 3.52.0; everything else the driver calls (fenced-lock
 * tokens, RSemaphore.tryAcquire(int, Duration), getPermits, setPermits,
 * ShardedSubscriptionMode, setLockWatchdogBatchSize) exists in both.
 */
final class Compat {
    private static final Method NON_REENTRANT = find("getNonReentrantLock");
    private static final Method NON_REENTRANT_FAIR = find("getNonReentrantFairLock");

    private Compat() {}

    private static Method find(String name) {
        try {
            return RedissonClient.class.getMethod(name, String.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    static RLock nonReentrantLock(RedissonClient redisson, String name) throws Args.Unsupported {
        return call(NON_REENTRANT, "getNonReentrantLock", redisson, name);
    }

    static RLock nonReentrantFairLock(RedissonClient redisson, String name) throws Args.Unsupported {
        return call(NON_REENTRANT_FAIR, "getNonReentrantFairLock", redisson, name);
    }

    private static RLock call(Method m, String what, RedissonClient redisson, String name)
            throws Args.Unsupported {
        if (m == null) {
            throw new Args.Unsupported("RedissonClient." + what + " is not in Redisson " + version()
                    + " (added in 4.4.0)");
        }
        try {
            return (RLock) m.invoke(redisson, name);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        } catch (InvocationTargetException e) {
            // Only builds an object; rethrow whatever it threw as itself.
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            throw new IllegalStateException(cause);
        }
    }

    /**
     * The Redisson version on the classpath: the jar manifest's
     * Implementation-Version, else the Maven pom.properties inside the jar.
     */
    static String version() {
        Package p = Redisson.class.getPackage();
        if (p != null && p.getImplementationVersion() != null) {
            return p.getImplementationVersion();
        }
        try (InputStream in = Redisson.class.getResourceAsStream(
                "/META-INF/maven/org.redisson/redisson/pom.properties")) {
            if (in != null) {
                Properties props = new Properties();
                props.load(in);
                String v = props.getProperty("version");
                if (v != null) {
                    return v;
                }
            }
        } catch (IOException e) {
            // Fall through to "unknown": the version is informative only.
        }
        return "unknown";
    }
}
