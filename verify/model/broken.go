package model

import (
	"errors"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

// The broken variants below are schedulers with one deliberate bug each,
// built by wrapping the real one (the scheduler's own code is not ours to
// break). The tests run every checker against them and require a
// rejection: a checker that accepts a broken variant proves nothing.
//
// Some bugs show in a single goroutine (the model-based test must catch
// them); others are check-then-act races that are correct in any
// sequential run, and only the linearizability checker can catch them.

// Broken names a broken variant and builds it around a real scheduler.
type Broken struct {
	Name string
	// Sequential is true when a single goroutine can expose the bug.
	Sequential bool
	// Exact is true when only an exact-priority (HeapCount 1) check can
	// expose it.
	Exact bool
	Wrap  func(Real) Pool
}

// BrokenVariants lists every broken variant.
func BrokenVariants() []Broken {
	return []Broken{
		{"IncludeReleasesHeld", true, false, func(r Real) Pool { return includeReleases{r} }},
		{"AcquireReturnsSecondBest", true, true, func(r Real) Pool { return secondBest{r} }},
		{"RemoveForgetsIdleResource", true, false, func(r Real) Pool { return forgetfulRemove{r} }},
		{"ReleaseLosesAHold", true, false, func(r Real) Pool { return &lostRelease{Real: r} }},
		{"RemoveChecksThenActs", false, false, func(r Real) Pool { return racyRemove{r} }},
		{"BatchAddOneByOne", false, false, func(r Real) Pool { return tornBatch{r} }},
		{"SuspendOverflows", true, false, func(r Real) Pool { return overflowingSuspend{r} }},
		{"RestsEndAnAdvanceLate", true, false, func(r Real) Pool { return lateTimer{r} }},
	}
}

// includeReleases "fixes" Include of a held resource by releasing it:
// the seed's bug of mixing up held and excluded, which hands the resource
// to a second holder.
type includeReleases struct{ Real }

func (b includeReleases) Include(id string) error {
	err := b.Real.Include(id)
	if errors.Is(err, crserrors.ErrResourceNotExcluded) {
		return b.Real.Release(id)
	}
	return err
}

// secondBest returns the second-best resource when there are two: an
// off-by-one in the heap.
type secondBest struct{ Real }

func (b secondBest) Acquire() (*Res, error) {
	first, err := b.Real.Acquire()
	if err != nil {
		return first, err
	}
	if b.Real.Stats().AcquirePolicy != "Exclusive" {
		// Under Shared an acquisition holds nothing: set the best aside
		// to reach the next one.
		if b.Real.Exclude(first.Key) != nil {
			return first, nil
		}
		defer func() { _ = b.Real.Include(first.Key) }()
		if second, err := b.Real.Acquire(); err == nil {
			return second, nil
		}
		return first, nil
	}
	second, err := b.Real.Acquire()
	if err != nil {
		return first, nil
	}
	_ = b.Real.Release(first.Key)
	return second, nil
}

// forgetfulRemove reports success for an idle resource but leaves it in
// the pool.
type forgetfulRemove struct{ Real }

func (b forgetfulRemove) Remove(id string) error {
	if st := b.Real.Stats(); st.Holders == 0 {
		if _, err := b.Real.Get(id); err == nil {
			return nil
		}
	}
	return b.Real.Remove(id)
}

// lostRelease drops every third Release on the floor while reporting
// success: a resource leaks, held by nobody.
type lostRelease struct {
	Real
	n atomic.Int64
}

func (b *lostRelease) Release(id string) error {
	if b.n.Add(1)%3 == 0 {
		if _, err := b.Real.Get(id); err == nil {
			return nil
		}
	}
	return b.Real.Release(id)
}

// racyRemove checks that the key exists, then removes it and ignores the
// result: correct in any sequential run, but two concurrent Removes of one
// key both succeed (the bug the issue names).
type racyRemove struct{ Real }

func (b racyRemove) Remove(id string) error {
	if _, err := b.Real.Get(id); err != nil {
		return err
	}
	runtime.Gosched() // widen the window between check and act
	_ = b.Real.Remove(id)
	return nil
}

// tornBatch adds a batch one resource at a time and takes them out again
// on a duplicate: the same result in any sequential run, but other
// goroutines see, and can take, part of a batch.
type tornBatch struct{ Real }

func (b tornBatch) BatchAdd(rs []*Res) error {
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.Key] {
			return crserrors.ErrDuplicateKey
		}
		seen[r.Key] = true
	}
	for i, r := range rs {
		if err := b.Real.Add(r); err != nil {
			for _, added := range rs[:i] {
				_ = b.Real.Remove(added.Key)
			}
			return err
		}
		runtime.Gosched()
	}
	return nil
}

// overflowingSuspend computes a suspension's deadline without saturating
// it: where the clock's reading plus d passes the end of int64, the
// deadline wraps into the past, and the resource does not rest at all
// (issue 28's first finding). A frozen clock at zero never shows it.
type overflowingSuspend struct{ Real }

func (b overflowingSuspend) Suspend(id string, d time.Duration) error {
	if now := b.Real.clock.Now().Sub(b.Real.epoch); d > math.MaxInt64-now {
		if _, err := b.Real.Get(id); err == nil {
			return nil
		}
	}
	return b.Real.Suspend(id, d)
}

// lateTimer's Advance fires only the timers that came due at the Advance
// before: each rest ends one Advance after its deadline, when the pool
// has long shown it available to other callers. A clock that never moves
// never shows it.
type lateTimer struct{ Real }

func (b lateTimer) Advance(d time.Duration, stepped func()) {
	b.Real.Advance(0, nil)
	b.Real.clock.Pause()
	b.Real.clock.Step(d, stepped)
	b.Real.clock.Resume()
}
