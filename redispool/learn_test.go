package redispool

import (
	"context"
	"errors"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// A limit the provider states becomes the bucket's for every process of
// the pool: lowered, the level is cut to it; raised, it is reached by
// refilling.
func TestLearnRetunesABucketForEveryProcess(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	other := newPool(t, c, Options{Name: p.Name()})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2, Limits: []config.Limit{tokens(100), requests(10)}})
	l := mustAcquire(t, p)
	if err := l.Learn(ctx, "tokens", 50); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, other, "a", map[string]int64{"tokens": 50, "requests": 9})
	if _, err := other.TryAcquire(ctx, WithCost(config.Cost{"tokens": 60})); !errors.Is(err, crserrors.ErrCostExceedsLimits) {
		t.Fatalf("a cost above the learned limit: %v", err)
	}
	if err := l.Learn(ctx, "tokens", 200); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, other, "a", map[string]int64{"tokens": 50, "requests": 9})
	for _, bad := range []struct {
		name  string
		limit int64
		want  error
	}{{"images", 10, crserrors.ErrUnknownLimit}, {"tokens", 0, crserrors.ErrInvalidCost}, {"tokens", config.MaxUnits + 1, crserrors.ErrInvalidCost}} {
		if err := l.Learn(ctx, bad.name, bad.limit); !errors.Is(err, bad.want) {
			t.Errorf("Learn(%q, %d) = %v, want %v", bad.name, bad.limit, err, bad.want)
		}
	}
	checkInvariants(t, c, p)
	mustRelease(t, l)
}
