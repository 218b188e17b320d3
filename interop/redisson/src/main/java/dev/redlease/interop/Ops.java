package dev.redlease.interop;

import java.util.HashMap;
import java.util.Map;

import org.redisson.api.RedissonClient;

/**
 * The table of queued ops: name to parser. Parsing runs on the reader
 * thread, so a malformed request is answered at once and never reaches an
 * owner; it also builds the Redisson objects (getLock and friends are
 * local and cheap), so the owner thread's timestamps bracket only the
 * Redisson call itself.
 */
final class Ops {
    /** The Redisson call of one request, run on its owner's thread. */
    @FunctionalInterface
    interface Call {
        /** Returns the reply value: Replies.VOID, null, a Boolean, a Number or a token. */
        Object run() throws Exception;
    }

    /** Checks a request's arguments and prepares its call. */
    @FunctionalInterface
    interface Op {
        Call prepare(Args args) throws Args.BadRequest, Args.Unsupported;
    }

    private final Map<String, Op> table = new HashMap<>();

    Ops(RedissonClient redisson) {
        LockOps.register(this, redisson);
        SyncOps.register(this, redisson);
        String id = redisson.getId();
        String version = Compat.version();
        put("ping", a -> {
            a.expect(0, "");
            return () -> "pong";
        });
        put("id", a -> {
            a.expect(0, "");
            return () -> id;
        });
        // Redisson names a lock's owner "<client-id>:<thread-id>" after the
        // calling thread; this tells a test which thread id an owner has.
        put("thread", a -> {
            a.expect(0, "");
            return () -> Thread.currentThread().getId();
        });
        put("version", a -> {
            a.expect(0, "");
            return () -> version;
        });
    }

    void put(String name, Op op) {
        if (table.putIfAbsent(name, op) != null) {
            throw new IllegalStateException("op registered twice: " + name);
        }
    }

    Call prepare(Args args) throws Args.BadRequest, Args.Unsupported {
        Op op = table.get(args.op());
        if (op == null) {
            throw new Args.BadRequest("unknown op: " + args.op());
        }
        return op.prepare(args);
    }
}
