package dev.redlease.interop;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import java.time.Duration;

import org.redisson.api.RCountDownLatch;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;

/** The synchronizers: RSemaphore, RPermitExpirableSemaphore, RCountDownLatch. */
final class SyncOps {
    private SyncOps() {}

    static void register(Ops ops, RedissonClient r) {
        // RSemaphore: a plain counter, no owner, no TTL.
        ops.put("sem.trysetpermits", a -> {
            a.expect(2, "<name> <n>");
            RSemaphore s = r.getSemaphore(a.str(0));
            int n = a.integer(1);
            return () -> s.trySetPermits(n);
        });
        ops.put("sem.addpermits", a -> {
            a.expect(2, "<name> <n>");
            RSemaphore s = r.getSemaphore(a.str(0));
            int n = a.integer(1);
            return () -> {
                s.addPermits(n);
                return Replies.VOID;
            };
        });
        ops.put("sem.acquire", a -> {
            a.expect(2, "<name> <n>");
            RSemaphore s = r.getSemaphore(a.str(0));
            int n = a.integer(1);
            return () -> {
                s.acquire(n);
                return Replies.VOID;
            };
        });
        // tryAcquire(int, Duration) is the timed form both 3.52.0 and 4.7.0
        // have undeprecated; with a zero wait it makes one attempt.
        ops.put("sem.tryacquire", a -> {
            a.expect(3, "<name> <n> <wait_ms>");
            RSemaphore s = r.getSemaphore(a.str(0));
            int n = a.integer(1);
            Duration wait = Duration.ofMillis(a.num(2));
            return () -> s.tryAcquire(n, wait);
        });
        ops.put("sem.release", a -> {
            a.expect(2, "<name> <n>");
            RSemaphore s = r.getSemaphore(a.str(0));
            int n = a.integer(1);
            return () -> {
                s.release(n);
                return Replies.VOID;
            };
        });
        ops.put("sem.available", a -> {
            a.expect(1, "<name>");
            RSemaphore s = r.getSemaphore(a.str(0));
            return s::availablePermits;
        });
        ops.put("sem.drain", a -> {
            a.expect(1, "<name>");
            RSemaphore s = r.getSemaphore(a.str(0));
            return s::drainPermits;
        });

        // RPermitExpirableSemaphore: permits with ids and leases (-1 = permanent).
        ops.put("xsem.trysetpermits", a -> {
            a.expect(2, "<name> <n>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            int n = a.integer(1);
            return () -> s.trySetPermits(n);
        });
        ops.put("xsem.setpermits", a -> {
            a.expect(2, "<name> <n>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            int n = a.integer(1);
            return () -> {
                s.setPermits(n);
                return Replies.VOID;
            };
        });
        ops.put("xsem.addpermits", a -> {
            a.expect(2, "<name> <n>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            int n = a.integer(1);
            return () -> {
                s.addPermits(n);
                return Replies.VOID;
            };
        });
        ops.put("xsem.acquire", a -> {
            a.expect(2, "<name> <lease_ms>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            long lease = a.num(1);
            return () -> s.acquire(lease, MILLISECONDS);
        });
        ops.put("xsem.tryacquire", a -> {
            a.expect(3, "<name> <wait_ms> <lease_ms>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            long wait = a.num(1);
            long lease = a.num(2);
            return () -> s.tryAcquire(wait, lease, MILLISECONDS);
        });
        ops.put("xsem.release", a -> {
            a.expect(2, "<name> <permit_id>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            String id = a.str(1);
            return () -> {
                s.release(id);
                return Replies.VOID;
            };
        });
        ops.put("xsem.tryrelease", a -> {
            a.expect(2, "<name> <permit_id>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            String id = a.str(1);
            return () -> s.tryRelease(id);
        });
        ops.put("xsem.available", a -> {
            a.expect(1, "<name>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            return s::availablePermits;
        });
        ops.put("xsem.permits", a -> {
            a.expect(1, "<name>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            return s::getPermits;
        });
        ops.put("xsem.acquired", a -> {
            a.expect(1, "<name>");
            RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(a.str(0));
            return s::acquiredPermits;
        });

        // RCountDownLatch.
        ops.put("latch.trysetcount", a -> {
            a.expect(2, "<name> <n>");
            RCountDownLatch l = r.getCountDownLatch(a.str(0));
            long n = a.num(1);
            return () -> l.trySetCount(n);
        });
        ops.put("latch.countdown", a -> {
            a.expect(1, "<name>");
            RCountDownLatch l = r.getCountDownLatch(a.str(0));
            return () -> {
                l.countDown();
                return Replies.VOID;
            };
        });
        ops.put("latch.count", a -> {
            a.expect(1, "<name>");
            RCountDownLatch l = r.getCountDownLatch(a.str(0));
            return l::getCount;
        });
        ops.put("latch.await", a -> {
            a.expect(2, "<name> <wait_ms>");
            RCountDownLatch l = r.getCountDownLatch(a.str(0));
            long wait = a.num(1);
            if (wait == -1) {
                return () -> {
                    l.await();
                    return true;
                };
            }
            return () -> l.await(wait, MILLISECONDS);
        });
        ops.put("latch.delete", a -> {
            a.expect(1, "<name>");
            RCountDownLatch l = r.getCountDownLatch(a.str(0));
            return l::delete;
        });
    }
}
