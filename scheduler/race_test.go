package scheduler_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

const raceRounds = 300

// together runs the functions at once, released by one barrier so they
// overlap as much as the scheduler lets them.
func together(fs ...func()) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, f := range fs {
		ready.Add(1)
		done.Add(1)
		go func(f func()) {
			defer done.Done()
			ready.Done()
			<-start
			f()
		}(f)
	}
	ready.Wait()
	close(start)
	done.Wait()
}

func TestRemoveRacingAddLeavesOneConsistentState(t *testing.T) {
	for i := 0; i < raceRounds; i++ {
		s := newScheduler(t, baseConfig(4, config.Exclusive))
		var addErr, removeErr error
		together(
			func() { addErr = s.Add(w("k", 1)) },
			func() { removeErr = s.Remove("k") },
		)
		if addErr != nil {
			t.Fatalf("Add: %v", addErr)
		}
		switch {
		case removeErr == nil:
			wantState(t, s, "k", "absent")
		case errors.Is(removeErr, crserrors.ErrResourceNotFound):
			wantState(t, s, "k", "active")
		default:
			t.Fatalf("Remove: %v", removeErr)
		}
		mustInvariants(t, s)
	}
}

func TestConcurrentRemovesSucceedExactlyOnce(t *testing.T) {
	for i := 0; i < raceRounds; i++ {
		s := newScheduler(t, baseConfig(2, config.Exclusive))
		addAll(t, s, w("k", 1))
		errs := make([]error, 4)
		together(
			func() { errs[0] = s.Remove("k") },
			func() { errs[1] = s.Remove("k") },
			func() { errs[2] = s.Remove("k") },
			func() { errs[3] = s.Remove("k") },
		)
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !errors.Is(err, crserrors.ErrResourceNotFound) {
				t.Fatal(err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d Removes succeeded, want 1", ok)
		}
		if s.Len() != 0 {
			t.Fatalf("Len = %d", s.Len())
		}
	}
}

func TestReleaseRacingRemoveNeverResurrects(t *testing.T) {
	for i := 0; i < raceRounds; i++ {
		s := newScheduler(t, baseConfig(2, config.Exclusive))
		addAll(t, s, w("k", 1))
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
		var releaseErr, removeErr error
		together(
			func() { releaseErr = s.Release("k") },
			func() { removeErr = s.Remove("k") },
		)
		if removeErr != nil {
			t.Fatalf("Remove: %v", removeErr)
		}
		if releaseErr != nil && !errors.Is(releaseErr, crserrors.ErrResourceNotFound) {
			t.Fatalf("Release: %v", releaseErr)
		}
		wantState(t, s, "k", "absent")
		if _, err := s.Acquire(); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
			t.Fatalf("removed resource still acquirable: %v", err)
		}
	}
}

func TestExcludeRacingReleaseEndsExcludedOrActive(t *testing.T) {
	for i := 0; i < raceRounds; i++ {
		s := newScheduler(t, baseConfig(2, config.Exclusive))
		addAll(t, s, w("k", 1))
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
		var releaseErr, excludeErr error
		together(
			func() { releaseErr = s.Release("k") },
			func() { excludeErr = s.Exclude("k") },
		)
		if releaseErr != nil {
			t.Fatalf("Release: %v", releaseErr)
		}
		switch {
		case excludeErr == nil:
			wantState(t, s, "k", "excluded")
		case errors.Is(excludeErr, crserrors.ErrResourceNotActive):
			wantState(t, s, "k", "active")
		default:
			t.Fatalf("Exclude: %v", excludeErr)
		}
		mustInvariants(t, s)
	}
}

func TestIncludeOfHeldResourceNeverGrantsItTwice(t *testing.T) {
	for i := 0; i < raceRounds; i++ {
		s := newScheduler(t, baseConfig(2, config.Exclusive))
		addAll(t, s, w("k", 1))
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
		var includeErr, acquireErr error
		together(
			func() { includeErr = s.Include("k") },
			func() { _, acquireErr = s.Acquire() },
		)
		wantErr(t, "Include of held", includeErr, crserrors.ErrResourceNotExcluded)
		wantErr(t, "second Acquire", acquireErr, crserrors.ErrNoResourceAvailable)
		wantState(t, s, "k", "held")
	}
}

func TestUpdateRacingAcquireKeepsOrderAndOwnership(t *testing.T) {
	for i := 0; i < 50; i++ {
		s := newScheduler(t, baseConfig(2, config.Exclusive))
		addAll(t, s, numbered(16)...)
		var got [4][]string
		together(
			func() {
				for p := 0; p < 200; p++ {
					_ = s.Update(w("w"+string(rune('0'+p%10)), 100-p))
				}
			},
			func() {
				for j := 0; j < 8; j++ {
					if v, err := s.Acquire(); err == nil {
						got[0] = append(got[0], v.ID)
					}
				}
			},
			func() {
				for j := 0; j < 8; j++ {
					if v, err := s.Acquire(); err == nil {
						got[1] = append(got[1], v.ID)
					}
				}
			},
		)
		seen := map[string]bool{}
		for _, ids := range got {
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("%s acquired twice without release", id)
				}
				seen[id] = true
				wantState(t, s, id, "held")
			}
		}
		if len(seen) != 16 {
			t.Fatalf("acquired %d of 16", len(seen))
		}
		mustInvariants(t, s)
	}
}
