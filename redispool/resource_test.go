package redispool

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	crserrors "github.com/crsched/crs/errors"
)

func TestAcquireHandsOutTheLowestPriorityFirst(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	add(t, p, Resource{ID: "slow", Priority: 50}, Resource{ID: "fast", Priority: 10}, Resource{ID: "mid", Priority: 20})
	for _, want := range []string{"fast", "mid", "slow"} {
		if l := mustAcquire(t, p); l.ID != want {
			t.Fatalf("acquired %q, want %q", l.ID, want)
		}
	}
	if _, err := p.TryAcquire(context.Background()); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire on a fully leased pool: %v, want ErrNoResourceAvailable", err)
	}
}

func TestEqualPrioritiesGoToTheResourceWithFewerHolders(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Priority: 1, Capacity: 2}, Resource{ID: "b", Priority: 1, Capacity: 2})
	var got []string
	for range 4 {
		got = append(got, mustAcquire(t, p).ID)
	}
	// a (0 holders, smaller ID), b (0 < 1), a, b.
	if want := []string{"a", "b", "a", "b"}; !equal(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	checkInvariants(t, c, p)
}

func TestCapacityBoundsTheLeasesOfAResource(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "gpu", Capacity: 3}, Resource{ID: "one", Priority: 5, Capacity: -7})
	var leases []*Lease
	for range 4 {
		leases = append(leases, mustAcquire(t, p))
	}
	if ids := []string{leases[0].ID, leases[1].ID, leases[2].ID, leases[3].ID}; !equal(ids, []string{"gpu", "gpu", "gpu", "one"}) {
		t.Fatalf("acquired %v, want gpu three times then one (capacity < 1 means 1)", ids)
	}
	if _, err := p.TryAcquire(context.Background()); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("fifth lease: %v, want ErrNoResourceAvailable", err)
	}
	if s := stats(t, p); s.Held != 2 || s.Leases != 4 || s.Available != 0 {
		t.Fatalf("stats %+v, want 2 held, 4 leases", s)
	}
	mustRelease(t, leases[1])
	if l := mustAcquire(t, p); l.ID != "gpu" {
		t.Fatalf("after a release acquired %q, want gpu", l.ID)
	}
	checkInvariants(t, c, p)
}

func TestAddOfAnExistingIDIsErrDuplicateKey(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "k", Priority: 1})
	err := p.Add(context.Background(), Resource{ID: "k", Priority: 0, Capacity: 5})
	if !errors.Is(err, crserrors.ErrDuplicateKey) || errors.Is(err, crserrors.ErrResourceDraining) {
		t.Fatalf("Add of a duplicate: %v, want ErrDuplicateKey only", err)
	}
	if s := stats(t, p); s.Resources != 1 {
		t.Fatalf("stats after a refused Add: %+v", s)
	}
	mustAcquire(t, p)
	if _, err := p.TryAcquire(context.Background()); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("the refused Add changed the capacity: %v", err)
	}
}

func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"Add with no ID", p.Add(ctx, Resource{}), ErrInvalidID},
		{"Add with NaN priority", p.Add(ctx, Resource{ID: "x", Priority: math.NaN()}), ErrInvalidPriority},
		{"Add with infinite priority", p.Add(ctx, Resource{ID: "x", Priority: math.Inf(-1)}), ErrInvalidPriority},
		{"Add over MaxCapacity", p.Add(ctx, Resource{ID: "x", Capacity: MaxCapacity + 1}), ErrInvalidCapacity},
		{"Update with no ID", p.Update(ctx, "", 1), ErrInvalidID},
		{"Update with NaN", p.Update(ctx, "x", math.NaN()), ErrInvalidPriority},
		{"Remove with no ID", p.Remove(ctx, ""), ErrInvalidID},
		{"Exclude with no ID", p.Exclude(ctx, ""), ErrInvalidID},
		{"Include with no ID", p.Include(ctx, ""), ErrInvalidID},
		{"Suspend with no ID", p.Suspend(ctx, "", 1), ErrInvalidID},
		{"Suspend for 0", p.Suspend(ctx, "x", 0), crserrors.ErrInvalidDuration},
		{"Suspend for < 0", p.Suspend(ctx, "x", -1), crserrors.ErrInvalidDuration},
		{"Update unknown", p.Update(ctx, "x", 1), crserrors.ErrResourceNotFound},
		{"Remove unknown", p.Remove(ctx, "x"), crserrors.ErrResourceNotFound},
		{"Exclude unknown", p.Exclude(ctx, "x"), crserrors.ErrResourceNotFound},
		{"Include unknown", p.Include(ctx, "x"), crserrors.ErrResourceNotFound},
		{"Suspend unknown", p.Suspend(ctx, "x", 1), crserrors.ErrResourceNotFound},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if keys := poolKeys(t, c, p); len(keys) != 0 {
		t.Fatalf("refused calls left keys: %v", keys)
	}
}

func TestUpdateReordersTheResources(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Priority: 1}, Resource{ID: "b", Priority: 2, Capacity: 2})
	if err := p.Update(context.Background(), "b", 0.5); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, p); l.ID != "b" {
		t.Fatalf("after Update acquired %q, want b", l.ID)
	}
	// A leased resource keeps its new priority for its free slot, and a
	// held one gets its priority when it comes back.
	if err := p.Update(context.Background(), "b", 3); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, p); l.ID != "a" {
		t.Fatalf("after the second Update acquired %q, want a", l.ID)
	}
	checkInvariants(t, c, p)
}

func TestExcludeTakesAResourceOutUntilInclude(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Priority: 1}, Resource{ID: "b", Priority: 2})
	if err := p.Exclude(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := p.Exclude(ctx, "a"); !errors.Is(err, crserrors.ErrResourceNotActive) {
		t.Fatalf("second Exclude: %v, want ErrResourceNotActive", err)
	}
	if err := p.Include(ctx, "b"); !errors.Is(err, crserrors.ErrResourceNotInactive) {
		t.Fatalf("Include of an idle resource: %v, want ErrResourceNotInactive", err)
	}
	if l := mustAcquire(t, p); l.ID != "b" {
		t.Fatalf("acquired %q while a is excluded", l.ID)
	}
	if err := p.Include(ctx, "b"); !errors.Is(err, crserrors.ErrResourceNotExcluded) {
		t.Fatalf("Include of a leased resource: %v, want ErrResourceNotExcluded", err)
	}
	if s := stats(t, p); s.Excluded != 1 || s.Held != 1 || s.Resources != 2 {
		t.Fatalf("stats %+v", s)
	}
	if err := p.Include(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, p); l.ID != "a" {
		t.Fatalf("acquired %q after Include, want a", l.ID)
	}
	checkInvariants(t, c, p)
}

func TestExcludeOfALeasedResourceLetsTheLeaseEndNormally(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2})
	l := mustAcquire(t, p)
	if err := p.Exclude(ctx, "a"); err != nil {
		t.Fatalf("Exclude of a leased resource: %v", err)
	}
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("an excluded resource's free slot was handed out: %v", err)
	}
	mustRelease(t, l)
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("the release put an excluded resource back: %v", err)
	}
	if s := stats(t, p); s.Excluded != 1 || s.Leases != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, p)
}

func TestRemoveOfALeasedResourceDrainsIt(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2})
	l := mustAcquire(t, p)
	if err := p.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("a removed resource was handed out: %v", err)
	}
	err := p.Add(ctx, Resource{ID: "a"})
	if !errors.Is(err, crserrors.ErrDuplicateKey) || !errors.Is(err, crserrors.ErrResourceDraining) {
		t.Fatalf("Add of a draining ID: %v, want ErrDuplicateKey and ErrResourceDraining", err)
	}
	for name, err := range map[string]error{
		"Remove":  p.Remove(ctx, "a"),
		"Update":  p.Update(ctx, "a", 1),
		"Exclude": p.Exclude(ctx, "a"),
		"Include": p.Include(ctx, "a"),
		"Suspend": p.Suspend(ctx, "a", 1),
	} {
		if !errors.Is(err, crserrors.ErrResourceNotFound) {
			t.Errorf("%s of a draining resource: %v, want ErrResourceNotFound", name, err)
		}
	}
	if s := stats(t, p); s.Resources != 0 || s.Draining != 1 || s.Leases != 1 {
		t.Fatalf("stats while draining %+v", s)
	}
	checkInvariants(t, c, p)
	mustRelease(t, l)
	if keys := poolKeys(t, c, p); len(keys) != 0 {
		t.Fatalf("keys left after the drained resource's last lease: %v", keys)
	}
	add(t, p, Resource{ID: "a"})
	if l := mustAcquire(t, p); l.ID != "a" {
		t.Fatalf("acquired %q", l.ID)
	}
}

func TestAnyIDAndAnyFinitePriorityWork(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ids := []string{"with:colons:", "{braces}", "with space", "ünïcode", strings.Repeat("long", 200), "0000000001:x"}
	priorities := []float64{1e300, -1e300, 5e-324, 0.1 + 0.2, 0.30000000000000004 + 1e-16, math.Copysign(0, -1)}
	for i, id := range ids {
		add(t, p, Resource{ID: id, Priority: priorities[i]})
	}
	checkInvariants(t, c, p)
	// By priority: -1e300, -0, 5e-324, 0.30000000000000004, the next
	// double up, 1e300: priorities reach the server exactly.
	want := []string{"{braces}", "0000000001:x", "with space", "ünïcode", strings.Repeat("long", 200), "with:colons:"}
	var got []string
	for range ids {
		l := mustAcquire(t, p)
		got = append(got, l.ID)
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.Exclude(context.Background(), l.ID); err != nil {
			t.Fatal(err)
		}
	}
	if !equal(got, want) {
		t.Fatalf("acquired in the order %q, want %q", got, want)
	}
	checkInvariants(t, c, p)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
