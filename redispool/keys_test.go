package redispool

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRemovingEveryResourceLeavesOnlyTheTokenCounter(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	ids := []string{"free", "leased", "excluded", "suspended", "cooled", "expired"}
	for i, id := range ids {
		add(t, p, Resource{ID: id, Priority: float64(i), Capacity: 2})
	}
	for _, k := range poolKeys(t, c, p) {
		if !strings.HasPrefix(k, "{"+p.name+"}:") {
			t.Errorf("key %q is outside the pool's hash tag", k)
		}
	}
	if err := p.Exclude(ctx, "excluded"); err != nil {
		t.Fatal(err)
	}
	if err := p.Suspend(ctx, "suspended", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := p.Exclude(ctx, "free"); err != nil { // so that leases go to the others
		t.Fatal(err)
	}
	leased := mustAcquire(t, p)
	cooled := mustAcquire(t, p)
	if err := cooled.Cooldown(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	short := newPool(t, c, Options{Name: p.name, LeaseTTL: 20 * time.Millisecond})
	expired := mustAcquire(t, short)
	if err := p.Include(ctx, "free"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := p.Remove(ctx, id); err != nil {
			t.Fatalf("Remove(%s): %v", id, err)
		}
	}
	// Two leases keep their resources draining; the rest is gone.
	checkInvariants(t, c, p)
	mustRelease(t, leased)
	waitServerTime(t, c, serverMillis(t, c)+30)
	// The expired lease is reclaimed by the next script, whichever.
	if s := stats(t, p); s != (Stats{}) {
		t.Fatalf("stats of an emptied pool: %+v", s)
	}
	// The last token stays, so that the next lease's is greater.
	if keys := poolKeys(t, c, p); len(keys) != 0 {
		t.Fatalf("keys left: %v (expired lease %s #%d)", keys, expired.ID, expired.Token)
	}
	if n := c.Exists(ctx, p.keys[5]).Val(); n != 1 {
		t.Fatalf("the last token went with the resources")
	}
	add(t, p, Resource{ID: "again"})
	if l := mustAcquire(t, p); l.Token <= expired.Token {
		t.Fatalf("token %d after the pool was emptied, %d before", l.Token, expired.Token)
	}
}
