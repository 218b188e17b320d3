package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
)

// board is what the hand-off's workers share, under mu.
type board struct {
	mu sync.Mutex
	// acquired is broadcast at every acquisition, for holders waiting to
	// rejoin.
	acquired *sync.Cond
	// The worker that released last, and when its release returned, if
	// hasLast.
	hasLast    bool
	lastWorker int
	lastAt     time.Time
	// Acquisitions so far.
	seq      uint64
	samples  []time.Duration
	failures uint64
}

// handoff follows crates/redlease-bench/src/handoff.rs: one holder, workers
// - 1 waiting in Lock() at every release, and a holder rejoins only once
// another worker holds the lock, so every acquisition is a hand-off. The
// latency is from one holder's Unlock() returning to the next holder's
// Lock() returning.
//
// redsync has no wait without end: Lock() tries 32 times, 50 to 250 ms apart
// at random (about 5 s), then returns ErrTaken. A user who must wait calls
// it again, as its documentation says, and so does each worker here; a
// Lock() that ran out of tries is not an error.
func handoff(rs *redsync.Redsync, workers int, duration time.Duration) string {
	key := fmt.Sprintf("bench:redsync:h:%d", os.Getpid())
	b := &board{}
	b.acquired = sync.NewCond(&b.mu)
	start := time.Now()
	for me := range workers {
		go func() {
			// redsync's defaults but the expiry: 32 tries, 50..250 ms apart.
			m := rs.NewMutex(key, redsync.WithExpiry(lease))
			for {
				if err := m.Lock(); err != nil {
					if !isBusy(err) {
						fmt.Fprintf(os.Stderr, "lock: %v\n", err)
						b.mu.Lock()
						b.failures++
						b.mu.Unlock()
					}
					continue
				}
				b.mu.Lock()
				// Both clocks are read under b.mu, so a release recorded
				// before this acquisition is earlier.
				now := time.Now()
				if b.hasLast && b.lastWorker != me {
					b.samples = append(b.samples, now.Sub(b.lastAt))
				}
				b.hasLast = false
				b.seq++
				mySeq := b.seq
				b.acquired.Broadcast()
				b.mu.Unlock()
				// A short critical section.
				runtime.Gosched()
				ok, err := m.Unlock()
				b.mu.Lock()
				if !ok {
					fmt.Fprintf(os.Stderr, "unlock: %v\n", err)
					b.failures++
				}
				// The next holder may have taken the board before we got
				// here: a hand-off in no time. Recording this release instead
				// would give the holder after that a sample spanning a whole
				// tenure.
				if b.seq == mySeq {
					b.hasLast, b.lastWorker, b.lastAt = true, me, time.Now()
				} else {
					b.samples = append(b.samples, 0)
				}
				// Rejoin only once someone else holds the lock.
				for b.seq <= mySeq {
					b.acquired.Wait()
				}
				b.mu.Unlock()
			}
		}()
	}
	time.Sleep(duration)
	b.mu.Lock()
	defer b.mu.Unlock()
	elapsed := time.Since(start).Seconds()
	return fmt.Sprintf(`{"acquisitions": %d, "handoffs": %d, "seconds": %.6f, "errors": %d, "quantiles_us": [%s]}`,
		b.seq, len(b.samples), elapsed, b.failures, strings.Join(quantilesUs(b.samples), ", "))
}
