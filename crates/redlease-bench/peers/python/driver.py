"""Peer driver for the redlease benchmark comparison: Python lock libraries
driven as their users would.

Usage: driver.py redis-py|python-redis-lock uncontended <redis-url> <tasks> <seconds>
   or: driver.py redis-py|python-redis-lock handoff <redis-url> <workers> <seconds>
   or: driver.py redis-py hold <redis-url> <key> <hold_ms> <wait_ms>

Prints one JSON line on stdout and exits; diagnostics go to stderr. `hold`
(for redlease's tests of one key shared with a peer) prints one line per
event instead: {"event": "acquired", "value": <the token under the key>,
"at_ms": <Unix time>} once it holds `key` (or {"event": "busy"} and exit
status 3 if it could not within `wait_ms`), then, `hold_ms` later and after
its release, {"event": "releasing"} just before it and {"event": "released",
"at_ms": ...} after it.

- redis-py: `redis.asyncio` `Lock` (`r.lock(name, timeout=30)`), asyncio tasks
  on one client. Its blocking `acquire()` polls with SET NX every `sleep`
  (default 0.1 s).
- python-redis-lock: `redis_lock.Lock(conn, name, expire=30)`, a sync library,
  so threads on one `redis.Redis` client. Its `acquire()` waits in BLPOP on a
  signal list that `release()` pushes to.

Both clients' connection pools default to at most 100 connections and raise
"Too many connections" beyond; every waiting task or thread holds one, so the
pool is sized to the worker count, as a user running that many would.

The hand-off follows crates/redlease-bench/src/handoff.rs: one holder and
`workers - 1` waiters at every release; a holder rejoins only once another
worker holds the lock, so every acquisition is a hand-off.
"""

import asyncio
import json
import os
import random
import sys
import threading
import time

import redis
import redis.asyncio
import redis_lock

LEASE = 30  # seconds


def quantiles_us(samples):
    """0th..100th percentile, the sample at index (len - 1) * q // 100 of
    the sorted list, in µs."""
    s = sorted(samples)
    if not s:
        return []
    return [round(s[(len(s) - 1) * q // 100] * 1e6, 1) for q in range(101)]


def finish(result):
    """Prints the result and exits at once: waiters blocked in acquire()
    (BLPOP for up to 30 s, or sleeping) would otherwise keep us alive."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# --- redis-py asyncio Lock -------------------------------------------------


async def redis_py_uncontended(url, tasks, seconds):
    r = redis.asyncio.Redis.from_url(url, max_connections=max(100, tasks))
    await r.ping()  # connect outside the timed window
    pid = os.getpid()
    start = time.perf_counter()
    deadline = start + seconds

    async def worker(i):
        lock = r.lock(f"bench:redis-py:u:{pid}:{i}", timeout=LEASE)
        pairs = errors = 0
        while time.perf_counter() < deadline:
            try:
                if not await lock.acquire():
                    errors += 1
                    continue
            except Exception as e:  # noqa: BLE001 - any failure is an error
                print(f"acquire: {e!r}", file=sys.stderr)
                errors += 1
                continue
            try:
                await lock.release()
                pairs += 1
            except Exception as e:  # noqa: BLE001
                print(f"release: {e!r}", file=sys.stderr)
                errors += 1
        return pairs, errors

    results = await asyncio.gather(*(worker(i) for i in range(tasks)))
    elapsed = time.perf_counter() - start
    finish({
        "pairs": sum(p for p, _ in results),
        "seconds": elapsed,
        "errors": sum(e for _, e in results),
    })


async def redis_py_handoff(url, workers, seconds):
    r = redis.asyncio.Redis.from_url(url, max_connections=max(100, workers))
    await r.ping()
    name = f"bench:redis-py:h:{os.getpid()}"
    # Shared state; one thread, so no lock is needed around it.
    st = {"last_release": None, "seq": 0, "samples": [], "errors": 0}
    acquired = asyncio.Condition()

    async def worker(me):
        lock = r.lock(name, timeout=LEASE)
        # Started at random moments within one polling period, as users'
        # tasks would be: started together, the 0.1 s polls of all 64 stay
        # in step and each hand-off waits a whole period.
        await asyncio.sleep(random.uniform(0, 0.1))
        while True:
            try:
                await lock.acquire()  # polls SET NX every 0.1 s until acquired
            except Exception as e:  # noqa: BLE001
                print(f"acquire: {e!r}", file=sys.stderr)
                st["errors"] += 1
                continue
            now = time.perf_counter()
            last = st["last_release"]
            if last is not None and last[0] != me:
                st["samples"].append(now - last[1])
            st["last_release"] = None
            st["seq"] += 1
            my_seq = st["seq"]
            async with acquired:
                acquired.notify_all()
            await asyncio.sleep(0)  # a short critical section
            try:
                await lock.release()
            except Exception as e:  # noqa: BLE001
                print(f"release: {e!r}", file=sys.stderr)
                st["errors"] += 1
            # The next holder may have resumed before us: a hand-off in no
            # time. Recording this release instead would give the holder
            # after that a sample spanning a whole tenure.
            if st["seq"] == my_seq:
                st["last_release"] = (me, time.perf_counter())
            else:
                st["samples"].append(0.0)
            # Rejoin only once someone else holds the lock.
            async with acquired:
                await acquired.wait_for(lambda: st["seq"] > my_seq)

    start = time.perf_counter()
    # Kept referenced: the event loop holds tasks only weakly.
    tasks = [asyncio.create_task(worker(i)) for i in range(workers)]  # noqa: F841
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - start
    samples = list(st["samples"])
    finish({
        "acquisitions": st["seq"],
        "handoffs": len(samples),
        "seconds": elapsed,
        "errors": st["errors"],
        "quantiles_us": quantiles_us(samples),
    })


# --- python-redis-lock (threads) -------------------------------------------


def prl_uncontended(url, tasks, seconds):
    conn = redis.Redis.from_url(url, max_connections=max(100, tasks))
    conn.ping()
    pid = os.getpid()
    totals = {"pairs": 0, "errors": 0}
    totals_lock = threading.Lock()
    start = time.perf_counter()
    deadline = start + seconds

    def worker(i):
        lock = redis_lock.Lock(conn, f"bench:python-redis-lock:u:{pid}:{i}", expire=LEASE)
        pairs = errors = 0
        while time.perf_counter() < deadline:
            try:
                if not lock.acquire():
                    errors += 1
                    continue
            except Exception as e:  # noqa: BLE001
                print(f"acquire: {e!r}", file=sys.stderr)
                errors += 1
                continue
            try:
                lock.release()
                pairs += 1
            except Exception as e:  # noqa: BLE001
                print(f"release: {e!r}", file=sys.stderr)
                errors += 1
        with totals_lock:
            totals["pairs"] += pairs
            totals["errors"] += errors

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(tasks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    finish({"pairs": totals["pairs"], "seconds": elapsed, "errors": totals["errors"]})


def prl_handoff(url, workers, seconds):
    conn = redis.Redis.from_url(url, max_connections=max(100, workers))
    conn.ping()
    name = f"bench:python-redis-lock:h:{os.getpid()}"
    st = {"last_release": None, "seq": 0, "samples": [], "errors": 0}
    cond = threading.Condition()  # guards st and signals new acquisitions

    def worker(me):
        lock = redis_lock.Lock(conn, name, expire=LEASE)
        while True:
            try:
                # SET NX, else BLPOP on the signal list (up to `expire` s).
                if not lock.acquire():
                    raise RuntimeError("acquire returned False")
            except Exception as e:  # noqa: BLE001
                print(f"acquire: {e!r}", file=sys.stderr)
                with cond:
                    st["errors"] += 1
                continue
            with cond:
                # Both clocks are read under `cond`, so a release recorded
                # before this acquisition is also earlier.
                now = time.perf_counter()
                last = st["last_release"]
                if last is not None and last[0] != me:
                    st["samples"].append(now - last[1])
                st["last_release"] = None
                st["seq"] += 1
                my_seq = st["seq"]
                cond.notify_all()
            time.sleep(0)  # a short critical section: give up the GIL once
            try:
                lock.release()
            except Exception as e:  # noqa: BLE001
                print(f"release: {e!r}", file=sys.stderr)
                with cond:
                    st["errors"] += 1
            with cond:
                # The next holder may have run before us (the GIL): a
                # hand-off in no time, see redis_py_handoff.
                if st["seq"] == my_seq:
                    st["last_release"] = (me, time.perf_counter())
                else:
                    st["samples"].append(0.0)
                # Rejoin only once someone else holds the lock.
                cond.wait_for(lambda: st["seq"] > my_seq)

    start = time.perf_counter()
    for i in range(workers):
        threading.Thread(target=worker, args=(i,), daemon=True).start()
    time.sleep(seconds)
    with cond:
        elapsed = time.perf_counter() - start
        result = {
            "acquisitions": st["seq"],
            "handoffs": len(st["samples"]),
            "seconds": elapsed,
            "errors": st["errors"],
            "quantiles_us": quantiles_us(st["samples"]),
        }
    finish(result)


# --- hold: one lock on a given key, for redlease's tests ---------------------


def event(**fields):
    """One event line, flushed at once: the test reads them as they come."""
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def redis_py_hold(url, key, hold_ms, wait_ms):
    """Acquires `key` with redis-py's Lock as its users would (a blocking
    acquire bounded by `blocking_timeout`, polling SET NX every 0.1 s), holds
    it `hold_ms`, releases it. Returns the exit status."""
    r = redis.asyncio.Redis.from_url(url)
    lock = r.lock(key, timeout=LEASE, blocking_timeout=wait_ms / 1000)
    if not await lock.acquire():
        event(event="busy")
        return 3
    # The token it stored: uuid1().hex, as bytes.
    event(event="acquired", value=lock.local.token.decode(), at_ms=round(time.time() * 1000))
    await asyncio.sleep(hold_ms / 1000)
    event(event="releasing")
    await lock.release()
    event(event="released", at_ms=round(time.time() * 1000))
    await r.aclose()
    return 0


def main():
    if len(sys.argv) == 7 and sys.argv[1:3] == ["redis-py", "hold"]:
        url, key, hold_ms, wait_ms = sys.argv[3:]
        sys.exit(asyncio.run(redis_py_hold(url, key, int(hold_ms), int(wait_ms))))
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    lib, mode, url, n, seconds = sys.argv[1:]
    n, seconds = int(n), float(seconds)
    if lib == "redis-py" and mode == "uncontended":
        asyncio.run(redis_py_uncontended(url, n, seconds))
    elif lib == "redis-py" and mode == "handoff":
        asyncio.run(redis_py_handoff(url, n, seconds))
    elif lib == "python-redis-lock" and mode == "uncontended":
        prl_uncontended(url, n, seconds)
    elif lib == "python-redis-lock" and mode == "handoff":
        prl_handoff(url, n, seconds)
    else:
        print(f"unknown library or mode: {lib} {mode}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
