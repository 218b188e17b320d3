package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// hold acquires key with redsync as its users would, holds it for
// holdFor, releases it; returns the exit status. Prints, flushed at once,
// {"event": "acquired", "value": <value>, "at_ms": <Unix time>} once it
// holds the key (the value redsync stored: 16 random bytes in standard
// base64, printed as the text it is), or {"event": "busy"} and returns 3
// if it could not within wait; then {"event": "releasing"} just before the
// release and {"event": "released", "at_ms": ...} after it.
//
// The wait is redsync's own: Lock() with its default tries and delays (32
// tries, 50 to 250 ms apart at random), bounded by a context that ends
// after wait, and called again if its tries run out first. A context
// ended before the first try would fail it, so the first try is TryLock(),
// which a wait of 0 stops at. (With go-redis's defaults the context is
// not read once a command is sent, so one ending during a try cannot
// leave a key set but unreported.)
func hold(url, key string, holdFor, wait time.Duration) int {
	opts, err := goredislib.ParseURL(url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "url: %v\n", err)
		return 2
	}
	client := goredislib.NewClient(opts)
	defer client.Close()
	rs := redsync.New(goredis.NewPool(client))
	m := rs.NewMutex(key, redsync.WithExpiry(lease))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = m.TryLock()
	for err != nil && ctx.Err() == nil {
		if !isBusy(err) {
			fmt.Fprintf(os.Stderr, "lock: %v\n", err)
		}
		err = m.LockContext(ctx)
	}
	if err != nil {
		// Busy is an answer here, not a failure.
		if !isBusy(err) && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "lock: %v\n", err)
		}
		event(`"event": "busy"`)
		return 3
	}
	event(fmt.Sprintf(`"event": "acquired", %s, "at_ms": %d`, valueFields(m.Value()), time.Now().UnixMilli()))
	time.Sleep(holdFor)
	event(`"event": "releasing"`)
	if ok, err := m.Unlock(); !ok {
		fmt.Fprintf(os.Stderr, "unlock: %v\n", err)
		return 1
	}
	event(fmt.Sprintf(`"event": "released", "at_ms": %d`, time.Now().UnixMilli()))
	return 0
}

// valueFields is the "value" field of the acquired event: the value as
// text when it is printable ASCII that needs no escape in JSON (redsync's
// base64 always is), else its bytes in hex with "encoding": "hex" (a
// WithGenValueFunc of one's own could store anything).
func valueFields(value string) string {
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Sprintf(`"value": "%s", "encoding": "hex"`, hex.EncodeToString([]byte(value)))
		}
	}
	return fmt.Sprintf(`"value": "%s"`, value)
}

// event prints {fields} as one line and flushes it: the test reads the
// events as they come. (os.Stdout is not buffered.)
func event(fields string) {
	fmt.Fprintf(os.Stdout, "{%s}\n", fields)
}
