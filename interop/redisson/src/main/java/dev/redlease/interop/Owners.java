package dev.redlease.interop;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The simulated owners: one platform thread per owner name, made on first
 * use. Redisson's locks belong to "<client-id>:<thread-id>" of the calling
 * thread, so an owner's requests must all run on its one thread, in the
 * order they arrived; a request to an owner blocked in a call waits behind
 * it. Different owners run concurrently.
 *
 * <p>The threads are daemons, so the process can exit while one is still
 * blocked in a lock() or acquire() that nothing will end.
 */
final class Owners {
    private final ConcurrentHashMap<String, Owner> owners = new ConcurrentHashMap<>();

    /** Queues a prepared call on the owner's thread; it replies when done. */
    void submit(String owner, String id, Ops.Call call) {
        owners.computeIfAbsent(owner, Owner::new).queue.add(() -> runAndReply(id, call));
    }

    /**
     * Interrupts the owner's thread, to end a blocked call that honours
     * interrupts. Returns false if no such owner has been used yet.
     */
    boolean interrupt(String owner) {
        Owner o = owners.get(owner);
        if (o == null) {
            return false;
        }
        o.thread.interrupt();
        return true;
    }

    private static void runAndReply(String id, Ops.Call call) {
        long start = Replies.nowMicros();
        Object value;
        try {
            value = call.run();
        } catch (Throwable t) {
            Replies.err(id, start, Replies.nowMicros(), t);
            return;
        }
        Replies.ok(id, start, Replies.nowMicros(), value);
    }

    private static final class Owner {
        final LinkedBlockingQueue<Runnable> queue = new LinkedBlockingQueue<>();
        final Thread thread;

        Owner(String name) {
            thread = new Thread(this::loop, "owner-" + name);
            thread.setDaemon(true);
            thread.start();
        }

        private void loop() {
            while (true) {
                Runnable job;
                try {
                    job = queue.take();
                } catch (InterruptedException e) {
                    // An interrupt meant for a call that had already ended.
                    continue;
                }
                // An interrupt is for the call in progress: drop one left
                // over from an earlier call (Redisson re-sets the flag after
                // turning an interrupt into a RedisException), so it cannot
                // fail this one.
                Thread.interrupted();
                job.run();
            }
        }
    }
}
