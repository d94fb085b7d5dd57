package scheduler_test

import (
	"context"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// A misspelt name would otherwise be granted at a cost of 1 of every limit.
func TestLeaseRefusesACostNamingALimitNoResourceHas(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 2,
		&apiKey{ID: "a", RPM: 10, TPM: 10000}, &apiKey{ID: "b", Priority: 1, RPM: 10})
	misspelt := scheduler.WithCost(config.Cost{"tokns": 5000})
	_, err := s.Lease(context.Background(), misspelt)
	wantErr(t, "Lease", err, crserrors.ErrUnknownLimit)
	_, err = s.LeaseByAffinity(context.Background(), acquire.StringIdentifier("session"), misspelt)
	wantErr(t, "LeaseByAffinity", err, crserrors.ErrUnknownLimit)
	wantRemaining(t, s, "a", map[string]int64{"requests": 10, "tokens": 10000})
	wantRemaining(t, s, "b", map[string]int64{"requests": 10})
	if st := s.Stats(); st.HeldResources != 0 || st.Waiters != 0 {
		t.Fatalf("after refusals: %d held, %d waiting", st.HeldResources, st.Waiters)
	}
	l := leaseNow(t, s, tokens(5000)) // a name one resource has
	if l.Key() != "a" {
		t.Fatalf("tokens leased from %s, want a", l.Key())
	}
	wantRemaining(t, s, "a", map[string]int64{"requests": 9, "tokens": 5000})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestAllowUnknownLimitsGrantsACostWithAnUnknownName(t *testing.T) {
	s := newKeyPool(t, fakeclock.New(), config.Shared, 1, &apiKey{ID: "a", RPM: 10})
	l := leaseNow(t, s, scheduler.WithCost(config.Cost{"tokens": 5000}), scheduler.AllowUnknownLimits())
	wantRemaining(t, s, "a", map[string]int64{"requests": 9})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// Without Limits a cost is a mistake too: it would be ignored.
func TestLeaseRefusesACostInAPoolWithoutLimits(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Shared))
	addAll(t, s, w("a", 1))
	_, err := s.Lease(context.Background(), scheduler.WithCost(config.Cost{"tokens": 1}))
	wantErr(t, "Lease", err, crserrors.ErrUnknownLimit)
	l, err := s.Lease(context.Background(), scheduler.WithCost(config.Cost{"tokens": 1}), scheduler.AllowUnknownLimits())
	if err != nil {
		t.Fatalf("Lease with AllowUnknownLimits: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
