package scheduler_test

import (
	"cmp"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// An exclusive Acquire of a shard's top leaves the heap unsorted until the
// next operation on the shard; a Release of that resource first puts it
// back where it was. These tests check both halves: the sifts are saved,
// and every other operation in between sees the heap in order.

func TestAcquireAndReleaseOfTheTopCompareNothing(t *testing.T) {
	var compared atomic.Int64
	cfg := baseConfig(1, config.Exclusive)
	cfg.Comparator = func(a, b *worker) int {
		compared.Add(1)
		return cmp.Compare(a.Priority, b.Priority)
	}
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(1000)...)
	for round := 0; round < 3; round++ {
		compared.Store(0)
		v, err := s.Acquire()
		if err != nil || v.ID != "w0" {
			t.Fatalf("Acquire = %v, %v; want w0", v, err)
		}
		if err := s.Release(v.ID); err != nil {
			t.Fatal(err)
		}
		// Taking w0 and sifting the heap would compare about 20 times.
		if got := compared.Load(); got != 0 {
			t.Fatalf("round %d: Acquire + Release compared %d times, want none", round, got)
		}
	}
}

func TestOperationsBetweenAnAcquireAndItsReleaseSeeTheHeapInOrder(t *testing.T) {
	mustGet := func(t *testing.T, s *scheduler.Scheduler[*worker, string], want string) {
		t.Helper()
		v, err := s.Acquire()
		if err != nil || v.ID != want {
			t.Fatalf("Acquire = %v, %v; want %s", v, err, want)
		}
	}
	ok := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name     string
		cooldown time.Duration
		between  func(t *testing.T, s *scheduler.Scheduler[*worker, string])
		after    []string // what the next Acquires return, after w0's Release
	}{
		{"another Acquire", 0,
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { mustGet(t, s, "w1") },
			[]string{"w0", "w2"}},
		{"an Add of a better resource", 0,
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { ok(t, s.Add(w("x", -1))) },
			[]string{"x", "w0", "w1"}},
		{"an Update of the resource held", 0,
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { ok(t, s.Update(w("w0", 100))) },
			[]string{"w1", "w2"}},
		{"an Update of another resource", 0,
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { ok(t, s.Update(w("w5", -1))) },
			[]string{"w5", "w0", "w1"}},
		{"a Remove of the next best", 0,
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { ok(t, s.Remove("w1")) },
			[]string{"w0", "w2"}},
		{"a Lease", 0,
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
				l, err := s.Lease(context.Background())
				if err != nil || l.Value().ID != "w1" {
					t.Fatalf("Lease = %v, %v; want w1", l.Value(), err)
				}
			},
			[]string{"w0", "w2"}},
		{"nothing, with a cooldown on release", time.Minute,
			func(*testing.T, *scheduler.Scheduler[*worker, string]) {},
			[]string{"w1", "w2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig(1, config.Exclusive)
			cfg.Clock = fakeclock.New()
			cfg.ReleaseCooldown = c.cooldown
			s := newScheduler(t, cfg)
			addAll(t, s, numbered(10)...)
			mustGet(t, s, "w0")
			c.between(t, s) // no CheckInvariants here: it settles the heap
			ok(t, s.Release("w0"))
			mustInvariants(t, s)
			for _, want := range c.after {
				mustGet(t, s, want)
			}
		})
	}
}
