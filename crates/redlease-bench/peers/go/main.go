// Command redsync-peer is a peer driver for the redlease benchmark
// comparison: github.com/go-redsync/redsync/v4 on go-redis v9 (its
// goredis/v9 pool), driven as its users would: one redsync.New(pool) over
// one go-redis client, shared by one goroutine per task, each with its own
// Mutex (a Mutex keeps the value of its last lock, so it is not shared).
//
// Usage: redsync-peer uncontended <redis-url> <tasks> <seconds>
//
//	or: redsync-peer handoff <redis-url> <workers> <seconds>
//	or: redsync-peer redlock <redis-url>,<redis-url>,... <tasks> <seconds>
//	or: redsync-peer hold <redis-url> <key> <hold_ms> <wait_ms>
//
// Prints one JSON line on stdout (see scripts/bench-peers for the
// protocol); hold, for redlease's tests of one key shared with a peer, one
// line per event (see hold.go). Diagnostics go to stderr.
//
// redsync's lock is the string layout: SET key <value> NX PX <expiry> (EX
// when the expiry is whole seconds), the value 16 random bytes in standard
// base64; Unlock is a compare-and-delete script (EVALSHA, EVAL on
// NOSCRIPT). Lock() tries 32 times by default, 50 to 250 ms apart at
// random, and sends the unlock script after every failed try. It
// publishes nothing on release.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// The lease every lock is taken with, as the other drivers do.
const lease = 30 * time.Second

func main() {
	args := os.Args[1:]
	if len(args) == 5 && args[0] == "hold" {
		os.Exit(hold(args[1], args[2], millis(args[3]), millis(args[4])))
	}
	if len(args) != 4 {
		fmt.Fprintf(os.Stderr, "usage: %s uncontended|handoff|redlock <redis-url>[,<redis-url>...] <n> <seconds>\n"+
			"   or: %[1]s hold <redis-url> <key> <hold_ms> <wait_ms>\n", os.Args[0])
		os.Exit(2)
	}
	mode, url := args[0], args[1]
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 1 {
		fail(2, "bad number %q", args[2])
	}
	seconds, err := strconv.ParseFloat(args[3], 64)
	if err != nil || seconds <= 0 {
		fail(2, "bad number %q", args[3])
	}
	duration := time.Duration(seconds * float64(time.Second))
	// RedLock's masters are one argument, comma-separated; the other modes
	// take one server.
	urls := []string{url}
	switch mode {
	case "uncontended", "handoff":
	case "redlock":
		urls = strings.Split(url, ",")
	default:
		fail(2, "unknown mode %s", mode)
	}
	pools := make([]redsyncredis.Pool, 0, len(urls))
	for _, u := range urls {
		client, err := connect(u, n)
		if err != nil {
			fail(1, "connect %s: %v", u, err)
		}
		pools = append(pools, goredis.NewPool(client))
	}
	rs := redsync.New(pools...)
	// Unlock's script is loaded by the first release (EVALSHA, then EVAL
	// on NOSCRIPT): a few pairs first, so that no measured pair pays for it.
	warm := rs.NewMutex("bench:redsync:warm-up", redsync.WithExpiry(lease), redsync.WithTries(1))
	for range 10 {
		if warm.Lock() == nil {
			_, _ = warm.Unlock()
		}
	}
	var line string
	switch mode {
	case "uncontended":
		line = uncontended(rs, n, duration)
	case "handoff":
		line = handoff(rs, n, duration)
	case "redlock":
		line = redlock(rs, n, duration)
	}
	fmt.Println(line)
	// Waiters sleeping between tries would keep nothing alive in Go, but
	// leave at once all the same, as the other drivers do.
	os.Exit(0)
}

// connect makes one go-redis client for url with its default options (a
// pool of up to 10 connections per CPU, one command in flight on each),
// and opens the connections that tasks will use outside the timed window:
// go-redis opens them on first use.
func connect(url string, tasks int) (*goredislib.Client, error) {
	opts, err := goredislib.ParseURL(url)
	if err != nil {
		return nil, err
	}
	client := goredislib.NewClient(opts)
	ctx := context.Background()
	conns := make([]*goredislib.Conn, 0, tasks)
	defer func() {
		for _, c := range conns {
			_ = c.Close() // back to the pool
		}
	}()
	for range min(tasks, client.Options().PoolSize) {
		c := client.Conn()
		conns = append(conns, c)
		if err := c.Ping(ctx).Err(); err != nil {
			return nil, err
		}
	}
	return client, nil
}

// isBusy tells whether err only says that the key is held: redsync's
// ErrTaken (the key is someone else's on a quorum), or ErrFailed (its
// tries, or its context, ran out).
func isBusy(err error) bool {
	var taken *redsync.ErrTaken
	return errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed)
}

// uncontended: each task locks and unlocks a key of its own until the time
// is up. One try per lock (WithTries(1), what TryLock does): the key is
// never busy, and a failed try is an error to count, not to wait out.
func uncontended(rs *redsync.Redsync, tasks int, duration time.Duration) string {
	pid := os.Getpid()
	cpu := cpuSeconds()
	start := time.Now()
	deadline := start.Add(duration)
	var pairs, failures atomic.Int64
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			m := rs.NewMutex(fmt.Sprintf("bench:redsync:u:%d:%d", pid, i),
				redsync.WithExpiry(lease), redsync.WithTries(1))
			var p, e int64
			for time.Now().Before(deadline) {
				if err := m.Lock(); err != nil {
					fmt.Fprintf(os.Stderr, "lock: %v\n", err)
					e++
					continue
				}
				if ok, err := m.Unlock(); !ok {
					fmt.Fprintf(os.Stderr, "unlock: %v\n", err)
					e++
					continue
				}
				p++
			}
			pairs.Add(p)
			failures.Add(e)
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	return fmt.Sprintf(`{"pairs": %d, "seconds": %.6f, "errors": %d, "cpu_seconds": %.3f}`,
		pairs.Load(), elapsed, failures.Load(), cpuSeconds()-cpu)
}

// redlock is uncontended on the RedLock that rs's pools make, timing each
// pair: from the call to Lock() to the return of Unlock(), which both wait
// for every server. Same definitions as the bench's own side
// (crates/redlease-bench/src/redlock.rs) and rslock's driver.
func redlock(rs *redsync.Redsync, tasks int, duration time.Duration) string {
	cpu := cpuSeconds()
	pid := os.Getpid()
	start := time.Now()
	deadline := start.Add(duration)
	var (
		mu       sync.Mutex
		samples  []time.Duration
		failures int64
		wg       sync.WaitGroup
	)
	for i := range tasks {
		wg.Go(func() {
			m := rs.NewMutex(fmt.Sprintf("bench:redsync:r:%d:%d", pid, i),
				redsync.WithExpiry(lease), redsync.WithTries(1))
			var mine []time.Duration
			var e int64
			for time.Now().Before(deadline) {
				began := time.Now()
				if err := m.Lock(); err != nil {
					fmt.Fprintf(os.Stderr, "lock: %v\n", err)
					e++
					continue
				}
				if ok, err := m.Unlock(); !ok {
					fmt.Fprintf(os.Stderr, "unlock: %v\n", err)
					e++
					continue
				}
				mine = append(mine, time.Since(began))
			}
			mu.Lock()
			samples = append(samples, mine...)
			failures += e
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	cpu = cpuSeconds() - cpu
	return fmt.Sprintf(`{"pairs": %d, "seconds": %.6f, "errors": %d, "cpu_seconds": %.3f, "quantiles_us": [%s]}`,
		len(samples), elapsed, failures, cpu, strings.Join(quantilesUs(samples), ", "))
}

// cpuSeconds is this process's user+sys CPU time so far (all threads), so
// that the bench can set the client's work per pair beside the servers'.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// quantilesUs is the 0th..100th percentile of samples in microseconds: the
// sample at index (len - 1) * q / 100 of the sorted list; none without
// samples.
func quantilesUs(samples []time.Duration) []string {
	if len(samples) == 0 {
		return nil
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	out := make([]string, 0, 101)
	for q := range 101 {
		d := s[(len(s)-1)*q/100]
		out = append(out, strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64))
	}
	return out
}

func millis(s string) time.Duration {
	ms, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		fail(2, "bad number %q", s)
	}
	return time.Duration(ms) * time.Millisecond
}

func fail(status int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(status)
}
