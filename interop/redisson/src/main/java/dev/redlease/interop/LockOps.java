package dev.redlease.interop;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * The lock family: RLock and its kinds, fencing tokens, MultiLock.
 *
 * <p>Every request gets a fresh RLock object: RedissonLock keeps the lease of
 * its last acquire in a field (internalLockLeaseTime) that a re-entrant
 * unlock reuses, so one object shared by owners with different leases would
 * mix them up. Ownership itself is the calling thread, not the object.
 */
final class LockOps {
    private LockOps() {}

    /** The RLock of one kind, as a Java service would get it. */
    static RLock lock(RedissonClient redisson, String kind, String name)
            throws Args.BadRequest, Args.Unsupported {
        switch (kind) {
            case "lock":
                return redisson.getLock(name);
            case "nonreentrant":
                return Compat.nonReentrantLock(redisson, name);
            case "nonreentrantfair":
                return Compat.nonReentrantFairLock(redisson, name);
            case "fair":
                return redisson.getFairLock(name);
            case "read":
                return redisson.getReadWriteLock(name).readLock();
            case "write":
                return redisson.getReadWriteLock(name).writeLock();
            case "fenced":
                return redisson.getFencedLock(name);
            default:
                throw new Args.BadRequest("unknown lock kind: " + kind
                        + " (lock, nonreentrant, nonreentrantfair, fair, read, write, fenced)");
        }
    }

    static void register(Ops ops, RedissonClient r) {
        ops.put("lock", a -> {
            a.expect(3, "<kind> <name> <lease_ms>");
            RLock l = lock(r, a.str(0), a.str(1));
            long lease = a.num(2);
            if (lease == -1) {
                return () -> {
                    l.lock();
                    return Replies.VOID;
                };
            }
            return () -> {
                l.lock(lease, MILLISECONDS);
                return Replies.VOID;
            };
        });
        // Not in the brief's list: plain lock() ignores interrupts while it
        // waits (Redisson retries after one), so only this form ends on
        // `interrupt`.
        ops.put("lockinterruptibly", a -> {
            a.expect(3, "<kind> <name> <lease_ms>");
            RLock l = lock(r, a.str(0), a.str(1));
            long lease = a.num(2);
            if (lease == -1) {
                return () -> {
                    l.lockInterruptibly();
                    return Replies.VOID;
                };
            }
            return () -> {
                l.lockInterruptibly(lease, MILLISECONDS);
                return Replies.VOID;
            };
        });
        ops.put("trylock", a -> {
            a.expect(4, "<kind> <name> <wait_ms> <lease_ms>");
            RLock l = lock(r, a.str(0), a.str(1));
            long wait = a.num(2);
            long lease = a.num(3);
            return () -> l.tryLock(wait, lease, MILLISECONDS);
        });
        ops.put("unlock", a -> {
            RLock l = kindAndName(r, a);
            return () -> {
                l.unlock();
                return Replies.VOID;
            };
        });
        ops.put("forceunlock", a -> {
            RLock l = kindAndName(r, a);
            return l::forceUnlock;
        });
        ops.put("held", a -> {
            RLock l = kindAndName(r, a);
            return l::isHeldByCurrentThread;
        });
        ops.put("holdcount", a -> {
            RLock l = kindAndName(r, a);
            return l::getHoldCount;
        });
        ops.put("locked", a -> {
            RLock l = kindAndName(r, a);
            return l::isLocked;
        });
        ops.put("ttl", a -> {
            RLock l = kindAndName(r, a);
            return l::remainTimeToLive;
        });

        // RFencedLock: the token counter redisson_lock_token:{name}.
        ops.put("token.trylock", a -> {
            a.expect(3, "<name> <wait_ms> <lease_ms>");
            RFencedLock l = r.getFencedLock(a.str(0));
            long wait = a.num(1);
            long lease = a.num(2);
            return () -> l.tryLockAndGetToken(wait, lease, MILLISECONDS);
        });
        ops.put("token.lock", a -> {
            a.expect(1, "<name>");
            RFencedLock l = r.getFencedLock(a.str(0));
            return l::lockAndGetToken;
        });
        ops.put("token.get", a -> {
            a.expect(1, "<name>");
            RFencedLock l = r.getFencedLock(a.str(0));
            return l::getToken;
        });

        // MultiLock over plain RLocks. Unlock builds a new MultiLock over the
        // same names: it holds no state of its own, only its members.
        ops.put("multi.trylock", a -> {
            a.expect(3, "<wait_ms> <lease_ms> <name1,name2,...>");
            long wait = a.num(0);
            long lease = a.num(1);
            RLock m = multi(r, a.names(2));
            return () -> m.tryLock(wait, lease, MILLISECONDS);
        });
        ops.put("multi.lock", a -> {
            a.expect(2, "<lease_ms> <name1,name2,...>");
            long lease = a.num(0);
            RLock m = multi(r, a.names(1));
            if (lease == -1) {
                return () -> {
                    m.lock();
                    return Replies.VOID;
                };
            }
            return () -> {
                m.lock(lease, MILLISECONDS);
                return Replies.VOID;
            };
        });
        ops.put("multi.unlock", a -> {
            a.expect(1, "<name1,name2,...>");
            RLock m = multi(r, a.names(0));
            return () -> {
                // Every member is unlocked whatever the others answer:
                // unlockAsync sends them all at once. unlock() goes member
                // by member and stops at the first one no longer held (lost
                // when Redis restarted, say), which leaves the rest held,
                // renewed by the watchdog for as long as the process lives
                // (found by the judge's restart phase, #37).
                m.unlockAsync(Thread.currentThread().getId()).toCompletableFuture().join();
                return Replies.VOID;
            };
        });
    }

    private static RLock kindAndName(RedissonClient r, Args a) throws Args.BadRequest, Args.Unsupported {
        a.expect(2, "<kind> <name>");
        return lock(r, a.str(0), a.str(1));
    }

    private static RLock multi(RedissonClient r, String[] names) {
        RLock[] locks = new RLock[names.length];
        for (int i = 0; i < names.length; i++) {
            locks[i] = r.getLock(names[i]);
        }
        return r.getMultiLock(locks);
    }
}
