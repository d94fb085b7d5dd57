package redispool

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

// suspendedUntil is the end of id's suspension as the server stores it
// (ms), 0 if none.
func suspendedUntil(t *testing.T, p *Pool, id string) int64 {
	t.Helper()
	v, err := p.client.HGet(context.Background(), p.keys[0], "r"+id).Result()
	if err != nil {
		return 0
	}
	r, err := parseResource(v)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(r.suspEnd, 10, 64)
	return n
}

func TestSuspendKeepsAResourceOutUntilInclude(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Priority: 1}, Resource{ID: "b", Priority: 2})
	if err := p.Suspend(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, p); l.ID != "b" {
		t.Fatalf("acquired %q while a is suspended", l.ID)
	}
	if s := stats(t, p); s.Suspended != 1 || s.Held != 1 || s.Available != 0 {
		t.Fatalf("stats %+v", s)
	}
	if err := p.Include(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, p); l.ID != "a" {
		t.Fatalf("acquired %q after Include", l.ID)
	}
	checkInvariants(t, c, p)
}

func TestSuspendKeepsTheLaterDeadline(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	if err := p.Suspend(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	first := suspendedUntil(t, p, "a")
	if err := p.Suspend(ctx, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := suspendedUntil(t, p, "a"); got != first {
		t.Fatalf("a shorter suspension moved the end from %d to %d", first, got)
	}
	if err := p.Suspend(ctx, "a", 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := suspendedUntil(t, p, "a"); got < first+3_599_000 {
		t.Fatalf("a longer suspension did not move the end (%d, then %d)", first, got)
	}
	checkInvariants(t, c, p)
}

func TestASuspensionEndsByItself(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2})
	if err := p.Suspend(ctx, "a", 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitServerTime(t, c, suspendedUntil(t, p, "a"))
	if s := stats(t, p); s.Suspended != 0 || s.Available != 1 {
		t.Fatalf("stats after the suspension's end %+v", s)
	}
	mustAcquire(t, p)
	mustAcquire(t, p) // both slots are back
	checkInvariants(t, c, p)
}

func TestSuspendingALeasedResourceTakesEffectAsItsLeasesEnd(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2})
	l := mustAcquire(t, p)
	if err := p.Suspend(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("the free slot of a suspended resource was handed out: %v", err)
	}
	mustRelease(t, l) // the lease ran on
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("the release ended the suspension: %v", err)
	}
	if s := stats(t, p); s.Suspended != 1 || s.Leases != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, p)
}

func TestSuspendOfAnExcludedResourceIsErrResourceNotActive(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	if err := p.Exclude(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := p.Suspend(ctx, "a", time.Hour); !errors.Is(err, crserrors.ErrResourceNotActive) {
		t.Fatalf("Suspend of an excluded resource: %v", err)
	}
	if suspendedUntil(t, p, "a") != 0 {
		t.Fatal("the refused Suspend was recorded")
	}
}

func TestExcludeEndsASuspension(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	if err := p.Suspend(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := p.Exclude(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, p); s.Excluded != 1 || s.Suspended != 0 {
		t.Fatalf("stats %+v", s)
	}
	if err := p.Include(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, p)
	checkInvariants(t, c, p)
}

func TestCooldownReleasesAndSuspendsInOneStep(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Priority: 1, Capacity: 2}, Resource{ID: "b", Priority: 2})
	l, other := mustAcquire(t, p), mustAcquire(t, p)
	if l.ID != "a" || other.ID != "a" {
		t.Fatalf("leased %s and %s, want a twice", l.ID, other.ID)
	}
	if err := l.Cooldown(ctx, 0); !errors.Is(err, crserrors.ErrInvalidDuration) {
		t.Fatalf("Cooldown(0): %v", err)
	}
	if err := l.Cooldown(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("Release after Cooldown: %v", err)
	}
	if got := mustAcquire(t, p); got.ID != "b" {
		t.Fatalf("acquired %q while a cools down", got.ID)
	}
	mustRelease(t, other) // the other holder's lease is untouched
	if s := stats(t, p); s.Suspended != 1 || s.Leases != 1 {
		t.Fatalf("stats %+v", s)
	}
	if until := suspendedUntil(t, p, "a"); until < serverMillis(t, c)+3_000_000 {
		t.Fatalf("cooldown ends at %d, not an hour from now", until)
	}
	checkInvariants(t, c, p)
}

func TestCooldownOfALeaseOnARemovedResourceJustEndsIt(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	l := mustAcquire(t, p)
	if err := p.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := l.Cooldown(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if keys := poolKeys(t, c, p); len(keys) != 0 {
		t.Fatalf("keys left: %v", keys)
	}
}
