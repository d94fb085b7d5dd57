package redispool

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

// setLastToken makes the pool's last token ahead, as if it had been
// granted by a server whose clock was ahead of this one's: the state a
// server whose clock is behind inherits (a restart that kept the data, a
// promoted replica, a clock stepped back).
func setLastToken(t *testing.T, p *Pool, token uint64) {
	t.Helper()
	if err := p.client.Set(context.Background(), p.keys[5], strconv.FormatUint(token, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// clockAhead is how far ahead of the server's clock the tests put the
// last token: a day, in microseconds.
const clockAhead = uint64(24 * time.Hour / time.Microsecond)

func TestTokensFollowTheLastOneWhenTheServerClockIsBehindIt(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Capacity: 2})
	first := mustAcquire(t, p)
	ahead := first.Token + clockAhead
	setLastToken(t, p, ahead)
	second := mustAcquire(t, p)
	if second.Token != ahead+1 {
		t.Fatalf("token %d after %d, with the server clock a day behind it: want %d", second.Token, ahead, ahead+1)
	}
	mustRelease(t, first)
	mustRelease(t, second)
	// Emptying the pool keeps the last token.
	if err := p.Remove(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	add(t, p, Resource{ID: "b"})
	if third := mustAcquire(t, p); third.Token != ahead+2 {
		t.Fatalf("token %d after the pool was emptied, want %d", third.Token, ahead+2)
	}
}

// A server restarted with its data (AOF) keeps the pool: running leases
// and the last token, which the next grant follows even when the
// server's clock is behind it.
func TestARestartThatKeepsTheDataKeepsLeasesAndTokensIncreasing(t *testing.T) {
	srv := ownRestartable(t, "--appendonly", "yes", "--appendfsync", "always")
	c := failFastClient(t, srv.addr())
	p := newPool(t, c, Options{LeaseTTL: time.Hour})
	add(t, p, Resource{ID: "a"}, Resource{ID: "b"})
	held := mustAcquire(t, p)
	ahead := held.Token + clockAhead
	setLastToken(t, p, ahead)

	srv.stop()
	srv.start()
	waitConnected(t, c)
	if s := stats(t, p); s.Resources != 2 || s.Leases != 1 {
		t.Fatalf("after a restart with the data: %+v, want 2 resources and 1 lease", s)
	}
	next := mustAcquire(t, p)
	if next.ID == held.ID || next.Token != ahead+1 {
		t.Fatalf("after the restart got %s #%d, want the other resource with token %d", next.ID, next.Token, ahead+1)
	}
	mustRelease(t, held) // the lease survived the restart
	mustRelease(t, next)
	checkInvariants(t, c, p)
}

// The server's clock decides when a lease ends; Deadline is the holder's
// estimate by its own clock. When the server's clock passes the deadline
// early (a step forward on the Redis host, a failover to a server whose
// clock is ahead), the lease is over while Deadline still shows time
// left, and only the fencing token tells the guarded resource that the
// holder is stale. The test cannot step the host's clock; it moves the
// lease's deadline into the server's past instead, which is the same
// state for the scripts.
func TestAServerClockPastTheDeadlineEndsTheLeaseWhateverDeadlineSays(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{LeaseTTL: time.Hour})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	stale := mustAcquire(t, p)
	if err := c.ZAdd(ctx, p.keys[2], redis.Z{Score: float64(serverMillis(t, c) - 1), Member: stale.member}).Err(); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(stale.Deadline()); left < 50*time.Minute {
		t.Fatalf("Deadline %v away, want the hour it was granted for", left)
	}
	fresh := mustAcquire(t, p)
	if fresh.ID != "a" || fresh.Token <= stale.Token {
		t.Fatalf("got %s #%d after the server's clock passed #%d's deadline", fresh.ID, fresh.Token, stale.Token)
	}
	if err := stale.Release(ctx); !errors.Is(err, crserrors.ErrLeaseExpired) {
		t.Fatalf("Release of the lease the server ended: %v, want ErrLeaseExpired", err)
	}
	if s := stats(t, p); s.ExpiredLeases != 1 || s.Leases != 1 {
		t.Fatalf("stats %+v, want 1 expired lease and 1 running", s)
	}
	mustRelease(t, fresh)
	checkInvariants(t, c, p)
}
