"""A redlease-judge client of redis-py's `Lock`, on the string layout.

The same loop as the redlease clients (crates/redlease-judge/src/client.rs)
and the same history lines: acquire one of the names (`Lock.acquire` with
`blocking_timeout`, redis-py's own polling wait), then, as a user of a lock
without fencing tokens would, take a token from the shared counter right
after acquiring (`INCR` of `redisson_lock_token:{name}`, seeded from the
server's clock as redlease seeds it), a fenced and an unfenced
read-modify-write in PostgreSQL, release. redis-py's lock has no watchdog:
its lease is fixed, `--lease-ms`.

Usage: redis_py.py --process P --redis URL --db URL --table T --names a,b
       --seed N --until-us T --lease-ms N --wait-ms N --hold-ms N --history F
       [--deployment single|sentinel|cluster --nodes host:port,... --master-name M]

With `--deployment sentinel`, the master behind the Sentinels `--nodes`
(`redis.sentinel.Sentinel(...).master_for(M)`); with `cluster`,
`redis.cluster.RedisCluster` on the seed nodes `--nodes`.
"""

import argparse
import json
import random
import sys
import time

import psycopg
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import LockNotOwnedError
from redis.sentinel import Sentinel

TOKEN_SCRIPT = """
local token = redis.call('incr', KEYS[1])
if token < 1000000000000000 then
    local clock = redis.call('time')
    token = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
    redis.call('set', KEYS[1], token)
end
return token
"""


# How often a waiting `Lock.acquire` tries again, in seconds.
POLL_S = 0.01


def token_key(name):
    """redlease's layout::token_key: a name with braces keeps its own hash tag."""
    if "{" in name:
        return "redisson_lock_token:" + name
    return "redisson_lock_token:{" + name + "}"


def now_us():
    return time.time_ns() // 1000


class Log:
    def __init__(self, path, process):
        self.file = open(path, "a", encoding="utf-8")
        self.process = process

    def write(self, f, ty, name, **extra):
        event = {"p": self.process, "c": "redis-py", "f": f, "type": ty, "name": name, "t": now_us()}
        event.update({k: v for k, v in extra.items() if v is not None})
        # One write per line, flushed: a kill never tears a line in two.
        self.file.write(json.dumps(event) + "\n")
        self.file.flush()


def main():
    ap = argparse.ArgumentParser()
    for flag in ["process", "redis", "db", "table", "names", "history"]:
        ap.add_argument("--" + flag, required=True)
    for flag in ["seed", "until-us", "lease-ms", "wait-ms", "hold-ms"]:
        ap.add_argument("--" + flag, type=int, required=True)
    ap.add_argument("--deployment", default="single", choices=["single", "sentinel", "cluster"])
    ap.add_argument("--nodes", default="")
    ap.add_argument("--master-name", default="mymaster")
    ap.add_argument("--guard", default="holder", choices=["holder", "token"])
    a = ap.parse_args()
    names = a.names.split(",")
    rng = random.Random(a.seed)
    log = Log(a.history, a.process)
    nodes = [(h, int(p)) for h, p in (n.rsplit(":", 1) for n in a.nodes.split(",") if n)]
    if a.deployment == "sentinel":
        r = Sentinel(nodes, socket_timeout=1.0).master_for(a.master_name, socket_timeout=1.0)
    elif a.deployment == "cluster":
        r = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in nodes], socket_timeout=1.0)
    else:
        r = redis.Redis.from_url(a.redis, socket_timeout=1.0)
    fence = r.register_script(TOKEN_SCRIPT)
    db = psycopg.connect(a.db, autocommit=True)
    table = a.table
    hold = a.hold_ms / 1000
    holds = 0
    while now_us() < a.until_us:
        name = rng.choice(names)
        log.write("acquire", "invoke", name)
        # redis-py waits by polling, every `sleep` seconds (0.1 by default),
        # while the other clients wake on a release's message: at 0.1 s it
        # lost nearly every race, and once (CI, stop 45: a loaded machine's
        # kill phase) acquired nothing in 12 s, which makes the run invalid.
        lock = r.lock(name, timeout=a.lease_ms / 1000, sleep=POLL_S,
                      blocking_timeout=a.wait_ms / 1000)
        try:
            got = lock.acquire()
        except Exception as e:  # noqa: BLE001 - every failure goes to the history
            log.write("acquire", "info", name, err=repr(e))
            time.sleep(0.05)
            continue
        if not got:
            log.write("acquire", "fail", name, err="busy")
            continue
        try:
            token = int(fence(keys=[token_key(name)]))
        except Exception as e:  # noqa: BLE001
            token = None
        log.write("acquire", "ok", name, token=token)
        holds += 1
        if token is not None:
            log.write("write", "invoke", name, token=token)
            try:
                holder = f"{a.process}/{holds}"
                if a.guard == "holder":
                    claim = (f"UPDATE {table} SET fence = %(t)s, holder = %(h)s WHERE id = %(n)s"
                             " AND (fence < %(t)s OR (fence = %(t)s AND holder = %(h)s)) RETURNING balance")
                    commit = (f"UPDATE {table} SET balance = %(b)s WHERE id = %(n)s"
                              " AND fence = %(t)s AND holder = %(h)s")
                else:
                    claim = (f"UPDATE {table} SET fence = %(t)s, holder = %(h)s WHERE id = %(n)s"
                             " AND fence <= %(t)s RETURNING balance")
                    commit = f"UPDATE {table} SET balance = %(b)s WHERE id = %(n)s AND fence = %(t)s"
                row = db.execute(claim, {"t": token, "h": holder, "n": name}).fetchone()
                if row is None:
                    log.write("write", "ok", name, token=token, accepted=False)
                else:
                    time.sleep(hold)
                    done = db.execute(commit, {"b": row[0] + 1, "n": name, "t": token, "h": holder}).rowcount
                    log.write("write", "ok", name, token=token, accepted=done == 1,
                              read=row[0] if done == 1 else None)
            except Exception as e:  # noqa: BLE001
                log.write("write", "info", name, token=token, err=repr(e))
        log.write("unfenced", "invoke", name)
        try:
            (read,) = db.execute(f"SELECT plain FROM {table} WHERE id = %s", (name,)).fetchone()
            time.sleep(hold)
            db.execute(f"UPDATE {table} SET plain = %s WHERE id = %s", (read + 1, name))
            log.write("unfenced", "ok", name, read=read)
        except Exception as e:  # noqa: BLE001
            log.write("unfenced", "info", name, err=repr(e))
        log.write("release", "invoke", name)
        try:
            lock.release()
            log.write("release", "ok", name)
        except LockNotOwnedError as e:
            log.write("release", "fail", name, err=str(e))
        except Exception as e:  # noqa: BLE001
            log.write("release", "info", name, err=repr(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
