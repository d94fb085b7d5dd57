package redispool

import (
	"context"
	"testing"
	"time"
)

func TestStatsCountsEachResourceInOneState(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p,
		Resource{ID: "held", Priority: 0},
		Resource{ID: "half", Priority: 1, Capacity: 2},
		Resource{ID: "excluded", Priority: 2},
		Resource{ID: "suspended", Priority: 3},
		Resource{ID: "draining", Priority: 4},
		Resource{ID: "free", Priority: 5},
	)
	if s := stats(t, p); s != (Stats{Resources: 6, Available: 6}) {
		t.Fatalf("fresh pool: %+v", s)
	}
	held, half := mustAcquire(t, p), mustAcquire(t, p)
	if held.ID != "held" || half.ID != "half" {
		t.Fatalf("leased %s and %s", held.ID, half.ID)
	}
	if err := p.Exclude(ctx, "excluded"); err != nil {
		t.Fatal(err)
	}
	if err := p.Suspend(ctx, "suspended", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := p.Exclude(ctx, "draining"); err != nil { // leased and removed below
		t.Fatal(err)
	}
	if err := p.Include(ctx, "draining"); err != nil {
		t.Fatal(err)
	}
	if err := p.Update(ctx, "draining", -1); err != nil {
		t.Fatal(err)
	}
	draining := mustAcquire(t, p)
	if draining.ID != "draining" {
		t.Fatalf("leased %s", draining.ID)
	}
	if err := p.Remove(ctx, "draining"); err != nil {
		t.Fatal(err)
	}
	want := Stats{Resources: 5, Available: 2, Held: 1, Excluded: 1, Suspended: 1, Draining: 1, Leases: 3}
	if s := stats(t, p); s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	checkInvariants(t, c, p)
}

// Waiters counts the Acquire calls of one Pool value, Queued those of
// every process in the pool's queue.
func TestStatsCountsTheWaitersOfThisPoolAndOfEveryProcess(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	other := newPool(t, newClient(t), Options{Name: p.name})
	add(t, p, Resource{ID: "a"})
	held := mustAcquire(t, p)
	startHub(t, p)
	startHub(t, other)
	first := queueAsync(t, p, parkings(p))
	second := queueAsync(t, other, parkings(other))
	third := queueAsync(t, other, parkings(other))
	if s := stats(t, other); s.Waiters != 2 || s.Queued != 3 {
		t.Fatalf("stats of the second Pool: %d waiters, %d queued; want 2 and 3", s.Waiters, s.Queued)
	}
	mustRelease(t, held)
	mustRelease(t, expectOnly(t, first, second, third))
	mustRelease(t, expectOnly(t, second, third))
	mustRelease(t, expectOnly(t, third))
	if s := stats(t, p); s.Waiters != 0 || s.Queued != 0 {
		t.Fatalf("stats once every waiter was served: %+v", s)
	}
}
