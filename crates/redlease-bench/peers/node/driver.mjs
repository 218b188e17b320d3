// Peer driver for the redlease benchmark comparison: npm `redlock` (v4, the
// `latest` tag) on ONE ioredis client, driven as its users would.
//
// Usage: node driver.mjs uncontended <redis-url> <tasks> <seconds>
//    or: node driver.mjs handoff <redis-url> <workers> <seconds>
// Prints one JSON line on stdout and exits; diagnostics go to stderr.
//
// redlock 4 has no waiting acquire of its own: `lock()` retries `retryCount`
// times (default 10), `retryDelay` 200 ms +- `retryJitter` 100 ms apart, and
// sends the unlock script after every failed try. A user who must wait sets
// `retryCount: -1` (retry forever), which is what the hand-off does; the
// uncontended loop keeps every default.

import Redis from 'ioredis';
import Redlock from 'redlock';

const LEASE_MS = 30_000;

const [mode, url, nArg, secondsArg] = process.argv.slice(2);
const n = Number.parseInt(nArg, 10);
const seconds = Number.parseFloat(secondsArg);
if (!['uncontended', 'handoff'].includes(mode) || !url || !(n > 0) || !(seconds > 0)) {
  console.error('usage: driver.mjs uncontended|handoff <redis-url> <n> <seconds>');
  process.exit(2);
}

// Promise.withResolvers() needs Node.js 22; Debian's nodejs may be older.
function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

const nowNs = () => process.hrtime.bigint();
const secondsSince = (start) => Number(nowNs() - start) / 1e9;

// Prints the result and exits at once: waiters in their retry timers would
// otherwise keep the process alive.
function finish(result) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
}

// The 0th..100th percentile of the samples (ns) in µs: the sample at index
// (len - 1) * q / 100 of the sorted list.
function quantilesUs(samples) {
  const s = [...samples].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (s.length === 0) return [];
  const out = [];
  for (let q = 0; q <= 100; q++) {
    const ns = s[Math.floor(((s.length - 1) * q) / 100)];
    out.push(Math.round(Number(ns) / 100) / 10);
  }
  return out;
}

// Each loop locks and unlocks a key of its own until the time is up.
async function uncontended(client, tasks) {
  const redlock = new Redlock([client]);
  let pairs = 0;
  let errors = 0;
  const start = nowNs();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  const worker = async (i) => {
    const key = `bench:redlock:u:${process.pid}:${i}`;
    while (nowNs() < deadline) {
      let lock;
      try {
        lock = await redlock.lock(key, LEASE_MS);
      } catch (e) {
        console.error(`lock: ${e}`);
        errors++;
        continue;
      }
      try {
        await lock.unlock();
        pairs++;
      } catch (e) {
        console.error(`unlock: ${e}`);
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: tasks }, (_, i) => worker(i)));
  finish({ pairs, seconds: secondsSince(start), errors });
}

// Same hand-off definition as crates/redlease-bench/src/handoff.rs: one
// holder, `workers - 1` waiting in `lock()` at every release, and a holder
// rejoins only once another worker holds the lock.
async function handoff(client, workers) {
  const redlock = new Redlock([client], { retryCount: -1 });
  const key = `bench:redlock:h:${process.pid}`;
  let lastRelease = null; // [worker, hrtime ns]
  let seq = 0;
  let errors = 0;
  const samples = [];
  // Resolved (and replaced) at every acquisition, for holders waiting to rejoin.
  let acquired = deferred();

  const worker = async (me) => {
    for (;;) {
      let lock;
      try {
        lock = await redlock.lock(key, LEASE_MS);
      } catch (e) {
        console.error(`lock: ${e}`);
        errors++;
        continue;
      }
      const now = nowNs();
      if (lastRelease !== null && lastRelease[0] !== me) samples.push(now - lastRelease[1]);
      lastRelease = null;
      const mySeq = ++seq;
      acquired.resolve();
      acquired = deferred();
      await new Promise(setImmediate); // a short critical section
      try {
        await lock.unlock();
      } catch (e) {
        console.error(`unlock: ${e}`);
        errors++;
      }
      // The next holder may have resumed before us: a hand-off in no time.
      // Recording this release instead would give the holder after that a
      // sample spanning a whole tenure.
      if (seq === mySeq) lastRelease = [me, nowNs()];
      else samples.push(0n);
      // Rejoin only once someone else holds the lock.
      while (seq <= mySeq) await acquired.promise;
    }
  };
  const start = nowNs();
  for (let i = 0; i < workers; i++) worker(i);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  finish({
    acquisitions: seq,
    handoffs: samples.length,
    seconds: secondsSince(start),
    errors,
    quantiles_us: quantilesUs(samples),
  });
}

const client = new Redis(url);
client.on('error', (e) => console.error(`ioredis: ${e}`));
await client.ping(); // connect outside the timed window
await (mode === 'uncontended' ? uncontended(client, n) : handoff(client, n));
