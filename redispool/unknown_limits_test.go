package redispool

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// acquireBoth is TryAcquire's and Acquire's answer to opts; Acquire's
// lease, if any, is released.
func acquireBoth(t *testing.T, p *Pool, opts ...AcquireOption) (tryErr, acquireErr error) {
	t.Helper()
	l, tryErr := p.TryAcquire(context.Background(), opts...)
	if tryErr == nil {
		mustRelease(t, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, acquireErr = p.Acquire(ctx, opts...)
	if acquireErr == nil {
		mustRelease(t, l)
	}
	return tryErr, acquireErr
}

func TestACostNamingAnUnknownLimitIsRefusedAndChangesNothing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Capacity: 4, Limits: []config.Limit{tokens(100), requests(10)}})
	before := readState(t, c, p)
	cases := []struct {
		cost config.Cost
		name string // the name the error gives: the first unknown, sorted
	}{
		{config.Cost{"tokns": 5}, `"tokns"`},
		{config.Cost{"tokens": 5, "tokns": 5}, `"tokns"`},
		{config.Cost{"tokns": 5, "images": 1}, `"images"`},
		{config.Cost{"tokns": 0}, `"tokns"`}, // an exemption names it all the same
	}
	for _, tc := range cases {
		tryErr, acquireErr := acquireBoth(t, p, WithCost(tc.cost))
		for call, err := range map[string]error{"TryAcquire": tryErr, "Acquire": acquireErr} {
			if !errors.Is(err, crserrors.ErrUnknownLimit) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("%s(%v) = %v, want ErrUnknownLimit naming %s", call, tc.cost, err, tc.name)
			}
		}
	}
	if after := readState(t, c, p); !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused cost changed the pool:\n%+v\nwas\n%+v", after, before)
	}
	if s := stats(t, p); s.Leases != 0 || s.Queued != 0 || s.Waiters != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, p)
}

func TestAllowUnknownLimitsGrants(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Capacity: 4, Limits: []config.Limit{tokens(100), requests(10)}})
	// "images" is ignored; requests, which the cost does not name, costs 1.
	tryErr, acquireErr := acquireBoth(t, p, WithCost(config.Cost{"tokens": 5, "images": 7}), AllowUnknownLimits())
	if tryErr != nil || acquireErr != nil {
		t.Fatalf("TryAcquire: %v; Acquire: %v", tryErr, acquireErr)
	}
	wantRemaining(t, p, "a", map[string]int64{"tokens": 90, "requests": 8})
	// A pool without limits has no limit names: every named cost is
	// refused, unless allowed.
	q := newPool(t, c, Options{})
	add(t, q, Resource{ID: "b"})
	if tryErr, acquireErr := acquireBoth(t, q, WithCost(config.Cost{"tokens": 5})); !errors.Is(tryErr, crserrors.ErrUnknownLimit) || !errors.Is(acquireErr, crserrors.ErrUnknownLimit) {
		t.Fatalf("without limits: TryAcquire: %v; Acquire: %v; want ErrUnknownLimit", tryErr, acquireErr)
	}
	if tryErr, acquireErr := acquireBoth(t, q, WithCost(config.Cost{"tokens": 5}), AllowUnknownLimits()); tryErr != nil || acquireErr != nil {
		t.Fatalf("without limits, allowed: TryAcquire: %v; Acquire: %v", tryErr, acquireErr)
	}
	checkInvariants(t, c, p)
	checkInvariants(t, c, q)
}

func TestALimitNameAnotherProcessAddsIsKnownAtOnce(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	other := newPool(t, clientOf(t, testAddr), Options{Name: p.name})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Priority: 2, Limits: []config.Limit{tokens(100)}})
	images := config.Cost{"images": 1}
	if _, err := tryCost(t, p, images); !errors.Is(err, crserrors.ErrUnknownLimit) {
		t.Fatalf("before any resource has it: %v", err)
	}
	// Another process adds a resource with the name: this one knows it
	// at its next call.
	imageLimit := config.Limit{Name: "images", Max: 10, Per: day}
	add(t, other, Resource{ID: "b", Priority: 1, Limits: []config.Limit{imageLimit}})
	l, err := tryCost(t, p, images)
	if err != nil || l.ID != "b" {
		t.Fatalf("after another process added it: %v, %v", l, err)
	}
	// A name goes with the last resource that has it, draining ones
	// aside (b drains: l holds it).
	if err := other.Remove(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := tryCost(t, p, images); !errors.Is(err, crserrors.ErrUnknownLimit) {
		t.Fatalf("after its resource was removed: %v", err)
	}
	mustRelease(t, l)
	// A Sync that gives a resource the name, and one that takes it away.
	if err := other.Sync(ctx, []Resource{{ID: "a", Priority: 2, Limits: []config.Limit{tokens(100), imageLimit}}}); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, p)
	if l, err = tryCost(t, p, config.Cost{"images": 1, "tokens": 1}); err != nil {
		t.Fatalf("after Sync added it: %v", err)
	}
	mustRelease(t, l)
	if err := other.Sync(ctx, []Resource{{ID: "a", Priority: 2, Limits: []config.Limit{tokens(100)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tryCost(t, p, images); !errors.Is(err, crserrors.ErrUnknownLimit) {
		t.Fatalf("after Sync took it away: %v", err)
	}
	checkInvariants(t, c, p)
}

func TestACallWithoutANamedCostIsNotChecked(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	// With no resource the names cannot be checked: the pool is empty.
	if _, err := tryCost(t, p, config.Cost{"tokns": 1}); !errors.Is(err, ErrPoolEmpty) {
		t.Fatalf("an empty pool: %v, want ErrPoolEmpty", err)
	}
	add(t, p, Resource{ID: "a", Capacity: 8})
	for _, opts := range [][]AcquireOption{nil, {WithCost(nil)}, {WithCost(config.Cost{})}, {AllowUnknownLimits()}} {
		if tryErr, acquireErr := acquireBoth(t, p, opts...); tryErr != nil || acquireErr != nil {
			t.Fatalf("%d options: TryAcquire: %v; Acquire: %v", len(opts), tryErr, acquireErr)
		}
	}
	checkInvariants(t, c, p)
}

// A pool that an earlier version kept counts no limit names: its names
// are read from the resources' limits, and counted from then on.
func TestLimitNamesAreCountedAgainWhenMissing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Limits: []config.Limit{tokens(100), requests(10)}})
	ctx := context.Background()
	fields, err := c.HKeys(ctx, p.keys[7]).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		if strings.HasPrefix(f, "#") {
			names = append(names, f)
		}
	}
	if len(names) != 2 {
		t.Fatalf("profiles' fields %v, want two names", fields)
	}
	if err := c.HDel(ctx, p.keys[7], names...).Err(); err != nil {
		t.Fatal(err)
	}
	l, err := tryCost(t, p, config.Cost{"tokens": 1})
	if err != nil {
		t.Fatalf("a known name, not counted: %v", err)
	}
	mustRelease(t, l)
	checkInvariants(t, c, p)
}
