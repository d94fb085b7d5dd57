package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// A lease by affinity goes to the resource that AcquireByAffinity picks
// for the same identifier, and holds it until released.
func TestLeaseByAffinityHoldsTheIdentifiersResource(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Exclusive))
	addAll(t, s, numbered(20)...)
	for i := range 50 {
		id := acquire.StringIdentifier(fmt.Sprintf("user-%d", i))
		v, err := s.AcquireByAffinity(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(v.ID); err != nil {
			t.Fatal(err)
		}
		l, err := s.LeaseByAffinity(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		if l.Key() != v.ID {
			t.Fatalf("%s: lease on %s, AcquireByAffinity picked %s", id, l.Key(), v.ID)
		}
		wantState(t, s, v.ID, "held")
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		wantState(t, s, v.ID, "active")
	}
}

// A caller whose resource is taken waits, and takes whichever resource
// comes free first.
func TestLeaseByAffinityWaitsAndTakesTheFirstFreedResource(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1), w("b", 2))
	id := acquire.StringIdentifier("user-1")
	home, err := s.AcquireByAffinity(id)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		l, err := s.LeaseByAffinity(bg, id)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- l.Key()
		_ = l.Release()
	}()
	if err := s.Release(other.ID); err != nil {
		t.Fatal(err)
	}
	if key := <-got; key != other.ID {
		t.Fatalf("the waiter got %s, want %s, the one freed (its own, %s, stayed held)", key, other.ID, home.ID)
	}
}

// A waiting lease by affinity ends with its context and holds nothing.
func TestLeaseByAffinityEndsWithItsContext(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := s.LeaseByAffinity(ctx, acquire.StringIdentifier("user-1"))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("LeaseByAffinity after cancel: %v, want context.Canceled", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
}

// Bad input is refused before anything is held.
func TestLeaseByAffinityRefusesBadInputAndHoldsNothing(t *testing.T) {
	s := newKeyPool(t, nil, config.Exclusive, 1, &apiKey{ID: "a", TPM: 1000})
	if _, err := s.LeaseByAffinity(bg, nil); !errors.Is(err, crserrors.ErrNilAffinityIdentifier) {
		t.Fatalf("nil identifier: %v, want ErrNilAffinityIdentifier", err)
	}
	if _, err := s.LeaseByAffinity(bg, acquire.StringIdentifier("u"), tokens(-1)); !errors.Is(err, crserrors.ErrInvalidCost) {
		t.Fatalf("negative cost: %v, want ErrInvalidCost", err)
	}
	wantRemaining(t, s, "a", map[string]int64{"tokens": 1000})
	l, err := s.LeaseByAffinity(bg, acquire.StringIdentifier("u"))
	if err != nil {
		t.Fatalf("after the refusals, the resource is free: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A lease by affinity takes its cost from the buckets of the resource it
// holds, in the same step, and Settle corrects it.
func TestLeaseByAffinityTakesItsCost(t *testing.T) {
	s := newKeyPool(t, nil, config.Exclusive, 1, &apiKey{ID: "a", RPM: 10, TPM: 1000}, &apiKey{ID: "b", RPM: 10, TPM: 1000})
	l, err := s.LeaseByAffinity(bg, acquire.StringIdentifier("user-1"), tokens(300))
	if err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, l.Key(), map[string]int64{"requests": 9, "tokens": 700})
	if err := l.Settle(config.Cost{"tokens": 100}); err != nil {
		t.Fatal(err)
	}
	wantRemaining(t, s, l.Key(), map[string]int64{"requests": 9, "tokens": 900})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
