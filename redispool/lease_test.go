package redispool

import (
	"context"
	"errors"
	"testing"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

func TestReleasingTwiceIsErrLeaseReleased(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	l := mustAcquire(t, p)
	mustRelease(t, l)
	other := mustAcquire(t, p) // the same resource, leased again
	for name, err := range map[string]error{
		"Release":  l.Release(ctx),
		"Extend":   l.Extend(ctx, time.Hour),
		"Cooldown": l.Cooldown(ctx, time.Hour),
	} {
		if !errors.Is(err, crserrors.ErrLeaseReleased) {
			t.Errorf("%s of a released lease: %v, want ErrLeaseReleased", name, err)
		}
	}
	if s := stats(t, p); s.Leases != 1 || s.Suspended != 0 {
		t.Fatalf("the refused calls changed the pool: %+v", s)
	}
	mustRelease(t, other)
	checkInvariants(t, c, p)
}

func TestAHandBuiltLeaseIsReleased(t *testing.T) {
	l := &Lease{ID: "a", Token: 1}
	if err := l.Release(context.Background()); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("Release: %v", err)
	}
	if err := l.Extend(context.Background(), time.Second); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("Extend: %v", err)
	}
}

func TestALeasePastItsDeadlineIsReclaimedAndReportsErrLeaseExpired(t *testing.T) {
	c := newClient(t)
	short := newPool(t, c, Options{LeaseTTL: 50 * time.Millisecond})
	// The same pool through a handle whose leases outlive the test.
	long := newPool(t, c, Options{Name: short.name, LeaseTTL: time.Hour})
	ctx := context.Background()
	add(t, short, Resource{ID: "a"})
	stale := mustAcquire(t, short)
	granted := serverMillis(t, c) // no earlier than the grant
	waitServerTime(t, c, granted+50)
	// Nothing ran since the deadline: the next call, whoever makes it,
	// reclaims the lease.
	fresh := mustAcquire(t, long)
	if fresh.ID != "a" || fresh.Token <= stale.Token {
		t.Fatalf("after expiry got %s #%d, want a with a token above %d", fresh.ID, fresh.Token, stale.Token)
	}
	for name, err := range map[string]error{
		"Release":  stale.Release(ctx),
		"Extend":   stale.Extend(ctx, time.Hour),
		"Cooldown": stale.Cooldown(ctx, time.Hour),
	} {
		if !errors.Is(err, crserrors.ErrLeaseExpired) {
			t.Errorf("%s of an expired lease: %v, want ErrLeaseExpired", name, err)
		}
	}
	if s := stats(t, long); s.ExpiredLeases != 1 || s.Leases != 1 || s.Suspended != 0 {
		t.Fatalf("stats %+v: want 1 expired lease, 1 running, and the stale calls to change nothing", s)
	}
	checkInvariants(t, c, long)
	mustRelease(t, fresh)
}

func TestExtendMovesTheDeadline(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{LeaseTTL: time.Minute})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	l := mustAcquire(t, p)
	deadline := func() int64 {
		score, err := c.ZScore(ctx, p.keys[2], l.member).Result()
		if err != nil {
			t.Fatalf("reading the deadline: %v", err)
		}
		return int64(score)
	}
	before, local := serverMillis(t, c), time.Now()
	if err := l.Extend(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := deadline(); d < before+3_600_000 || d > serverMillis(t, c)+3_600_000 {
		t.Fatalf("deadline %d is not an hour after the Extend (server clock %d)", d, before)
	}
	if d := l.Deadline(); d.Before(local.Add(time.Hour)) || d.After(time.Now().Add(time.Hour)) {
		t.Fatalf("Deadline %v is not an hour after the Extend call", d)
	}
	// Extend may also shorten a lease; it then expires at its new end.
	if err := l.Extend(ctx, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitServerTime(t, c, deadline())
	if s := stats(t, p); s.Leases != 0 || s.ExpiredLeases != 1 {
		t.Fatalf("a lease past its extended deadline still runs: %+v", s)
	}
	if err := l.Release(ctx); !errors.Is(err, crserrors.ErrLeaseExpired) {
		t.Fatalf("Release after the extended deadline: %v", err)
	}
	if err := l.Extend(ctx, 0); !errors.Is(err, crserrors.ErrInvalidDuration) {
		t.Fatalf("Extend(0): %v", err)
	}
}

func TestTokensIncreaseAcrossResourcesAndAfterThePoolIsEmptied(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2}, Resource{ID: "b", Priority: 1})
	var last uint64
	next := func() *Lease {
		l := mustAcquire(t, p)
		if l.Token <= last {
			t.Fatalf("token %d after %d", l.Token, last)
		}
		last = l.Token
		return l
	}
	a1, a2, b := next(), next(), next()
	mustRelease(t, a1)
	mustRelease(t, next())
	for _, l := range []*Lease{a2, b} {
		mustRelease(t, l)
	}
	for _, id := range []string{"a", "b"} {
		if err := p.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if keys := poolKeys(t, c, p); len(keys) != 0 {
		t.Fatalf("keys left: %v", keys)
	}
	add(t, p, Resource{ID: "a"})
	mustRelease(t, next())
	// With the data lost, tokens come from the server's clock: later
	// still, since this clock has not stepped back.
	if err := c.Del(ctx, p.keys[:]...).Err(); err != nil {
		t.Fatal(err)
	}
	add(t, p, Resource{ID: "a"})
	next()
}

func TestLeaseDeadlineIsNoLaterThanTheServers(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{LeaseTTL: time.Minute})
	add(t, p, Resource{ID: "a"})
	before := time.Now()
	l := mustAcquire(t, p)
	if d := l.Deadline(); d.Before(before.Add(time.Minute)) || d.After(time.Now().Add(time.Minute)) {
		t.Fatalf("Deadline %v is not a minute after the call", d)
	}
}
