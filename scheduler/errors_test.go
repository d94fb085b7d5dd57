package scheduler_test

import (
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// TestOperationsFollowTheErrorTable drives every keyed operation against a
// resource in every state and checks the error and the resulting state. A
// refused operation must change nothing. The error must be the sentinel
// itself, not a wrapper: code ported from CRS compares with ==.
func TestOperationsFollowTheErrorTable(t *testing.T) {
	type op struct {
		name string
		call func(s *scheduler.Scheduler[*worker, string]) error
	}
	release := op{"Release", func(s *scheduler.Scheduler[*worker, string]) error { return s.Release("x") }}
	exclude := op{"Exclude", func(s *scheduler.Scheduler[*worker, string]) error { return s.Exclude("x") }}
	include := op{"Include", func(s *scheduler.Scheduler[*worker, string]) error { return s.Include("x") }}
	remove := op{"Remove", func(s *scheduler.Scheduler[*worker, string]) error { return s.Remove("x") }}
	update := op{"Update", func(s *scheduler.Scheduler[*worker, string]) error { return s.Update(w("x", 7)) }}
	get := op{"Get", func(s *scheduler.Scheduler[*worker, string]) error { _, err := s.Get("x"); return err }}

	tests := []struct {
		op        op
		state     string
		want      error
		wantState string
	}{
		{release, "active", crserrors.ErrResourceNotInactive, "active"},
		{release, "held", nil, "active"},
		{release, "excluded", crserrors.ErrResourceNotHeld, "excluded"},
		{release, "absent", crserrors.ErrResourceNotFound, "absent"},
		{release, "draining", nil, "absent"},
		{exclude, "active", nil, "excluded"},
		{exclude, "held", crserrors.ErrResourceNotActive, "held"},
		{exclude, "excluded", crserrors.ErrResourceNotActive, "excluded"},
		{exclude, "absent", crserrors.ErrResourceNotFound, "absent"},
		{exclude, "draining", crserrors.ErrResourceNotFound, "draining"},
		{include, "active", crserrors.ErrResourceNotInactive, "active"},
		{include, "held", crserrors.ErrResourceNotExcluded, "held"},
		{include, "excluded", nil, "active"},
		{include, "absent", crserrors.ErrResourceNotFound, "absent"},
		{include, "draining", crserrors.ErrResourceNotFound, "draining"},
		{remove, "active", nil, "absent"},
		{remove, "held", nil, "draining"},
		{remove, "excluded", nil, "absent"},
		{remove, "absent", crserrors.ErrResourceNotFound, "absent"},
		{remove, "draining", crserrors.ErrResourceNotFound, "draining"},
		{update, "active", nil, "active"},
		{update, "held", nil, "held"},
		{update, "excluded", nil, "excluded"},
		{update, "absent", crserrors.ErrResourceNotFound, "absent"},
		{update, "draining", crserrors.ErrResourceNotFound, "draining"},
		{get, "active", nil, "active"},
		{get, "held", nil, "held"},
		{get, "excluded", nil, "excluded"},
		{get, "absent", crserrors.ErrResourceNotFound, "absent"},
		{get, "draining", crserrors.ErrResourceNotFound, "draining"},
	}
	for _, tt := range tests {
		t.Run(tt.op.name+"/"+tt.state, func(t *testing.T) {
			s := newScheduler(t, baseConfig(1, config.Exclusive))
			addAll(t, s, w("other", 5))
			putInState(t, s, "x", tt.state)
			err := tt.op.call(s)
			if err != tt.want {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			wantState(t, s, "x", tt.wantState)
			wantState(t, s, "other", "active")
			mustInvariants(t, s)
		})
	}
}

// putInState adds resource id (best priority) and moves it to state.
func putInState(t *testing.T, s *scheduler.Scheduler[*worker, string], id, state string) {
	t.Helper()
	if state == "absent" {
		return
	}
	addAll(t, s, w(id, 0))
	switch state {
	case "held", "draining":
		if got, err := s.Acquire(); err != nil || got.ID != id {
			t.Fatalf("Acquire = %v, %v", got, err)
		}
	case "excluded":
		if err := s.Exclude(id); err != nil {
			t.Fatal(err)
		}
	}
	if state == "draining" {
		if err := s.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	wantState(t, s, id, state)
}

// Code written for CRS compares errors with ==, so the operations CRS has
// must return its sentinels unwrapped, as CRS did.
func TestCRSOperationsReturnTheSentinelItself(t *testing.T) {
	var nilWorker *worker
	exclusive := newScheduler(t, baseConfig(2, config.Exclusive))
	addAll(t, exclusive, w("a", 1))
	shared := newScheduler(t, baseConfig(2, config.Shared))
	empty := newScheduler(t, baseConfig(2, config.Exclusive))
	outOfRange := baseConfig(2, config.Shared)
	outOfRange.AcquireStrategy = fixedStrategy(2)
	badStrategy := newScheduler(t, outOfRange)
	addAll(t, badStrategy, w("a", 1))
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"New with a negative HeapCount", func() error {
			cfg := baseConfig(-1, config.Shared)
			_, err := newSchedulerErr(cfg)
			return err
		}, crserrors.ErrInvalidHeapCount},
		{"New without a comparator", func() error {
			cfg := baseConfig(1, config.Shared)
			cfg.Comparator = nil
			_, err := newSchedulerErr(cfg)
			return err
		}, crserrors.ErrNilComparator},
		{"Add of nil", func() error { return exclusive.Add(nilWorker) }, crserrors.ErrNilResource},
		{"Add of a present key", func() error { return exclusive.Add(w("a", 2)) }, crserrors.ErrDuplicateKey},
		{"BatchAdd with nil", func() error { return exclusive.BatchAdd([]*worker{w("b", 1), nilWorker}) }, crserrors.ErrNilResource},
		{"BatchAdd repeating a key", func() error { return exclusive.BatchAdd([]*worker{w("b", 1), w("b", 2)}) }, crserrors.ErrDuplicateKey},
		{"BatchAdd of a present key", func() error { return exclusive.BatchAdd([]*worker{w("b", 1), w("a", 2)}) }, crserrors.ErrDuplicateKey},
		{"Update of nil", func() error { return exclusive.Update(nilWorker) }, crserrors.ErrNilResource},
		{"Update of an absent key", func() error { return exclusive.Update(w("b", 1)) }, crserrors.ErrResourceNotFound},
		{"Acquire from an empty pool", func() error { _, err := empty.Acquire(); return err }, crserrors.ErrNoResourceAvailable},
		{"Acquire with a strategy out of range", func() error { _, err := badStrategy.Acquire(); return err }, crserrors.ErrInvalidAcquireStrategy},
		{"AcquireByAffinity of nil", func() error { _, err := exclusive.AcquireByAffinity(nil); return err }, crserrors.ErrNilAffinityIdentifier},
		{"AcquireByAffinity from an empty pool", func() error { _, err := empty.AcquireByAffinity(userID("u")); return err }, crserrors.ErrNoResourceAvailable},
		{"Release under the Shared policy", func() error { return shared.Release("a") }, crserrors.ErrNotExclusive},
		{"Release of an absent key", func() error { return exclusive.Release("b") }, crserrors.ErrResourceNotFound},
		{"Get of an absent key", func() error { _, err := exclusive.Get("b"); return err }, crserrors.ErrResourceNotFound},
		{"Remove of an absent key", func() error { return exclusive.Remove("b") }, crserrors.ErrResourceNotFound},
	}
	for _, tt := range tests {
		if err := tt.call(); err != tt.want {
			t.Errorf("%s: got %v, want %v itself", tt.name, err, tt.want)
		}
	}
	closed, err := scheduler.New(baseConfig(1, config.Shared))
	if err != nil {
		t.Fatal(err)
	}
	closed.Shutdown()
	// CRS checks the identifier before the closed flag.
	if _, err := closed.AcquireByAffinity(nil); err != crserrors.ErrNilAffinityIdentifier {
		t.Errorf("AcquireByAffinity(nil) after Shutdown: got %v, want ErrNilAffinityIdentifier", err)
	}
}

func TestEveryOperationFailsAfterShutdown(t *testing.T) {
	s, err := scheduler.New(baseConfig(2, config.Exclusive))
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 1))
	s.Shutdown()
	s.Shutdown() // idempotent
	calls := map[string]func() error{
		"Add":               func() error { return s.Add(w("b", 1)) },
		"BatchAdd":          func() error { return s.BatchAdd([]*worker{w("c", 1)}) },
		"Acquire":           func() error { _, err := s.Acquire(); return err },
		"AcquireByAffinity": func() error { _, err := s.AcquireByAffinity(userID("u")); return err },
		"Release":           func() error { return s.Release("a") },
		"Update":            func() error { return s.Update(w("a", 2)) },
		"Exclude":           func() error { return s.Exclude("a") },
		"Include":           func() error { return s.Include("a") },
		"Remove":            func() error { return s.Remove("a") },
		"Get":               func() error { _, err := s.Get("a"); return err },
	}
	for name, call := range calls {
		if err := call(); err != crserrors.ErrSchedulerClosed {
			t.Errorf("%s after Shutdown: %v, want ErrSchedulerClosed", name, err)
		}
	}
	if s.Len() != 1 {
		t.Fatalf("Len after Shutdown = %d, want 1 (nothing changed)", s.Len())
	}
}

type userID string

func (u userID) AppendAffinityBytes(dst []byte) []byte { return append(dst, u...) }
