package scheduler_test

import (
	"errors"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// TestOperationsFollowTheErrorTable drives every keyed operation against a
// resource in every state and checks the error and the resulting state. A
// refused operation must change nothing.
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
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
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
		if err := call(); !errors.Is(err, crserrors.ErrSchedulerClosed) {
			t.Errorf("%s after Shutdown: %v, want ErrSchedulerClosed", name, err)
		}
	}
	if s.Len() != 1 {
		t.Fatalf("Len after Shutdown = %d, want 1 (nothing changed)", s.Len())
	}
}

type userID string

func (u userID) AppendAffinityBytes(dst []byte) []byte { return append(dst, u...) }
