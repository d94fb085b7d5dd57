package loadtest

import (
	"context"
	"sync/atomic"
	"testing"
)

// leakyPool forgets one release in five: the bug accounting is there for.
type leakyPool struct {
	*mutexPool
	n atomic.Int64
}

func (p *leakyPool) end(h *mutexHandle, failed bool) error {
	if p.n.Add(1)%5 == 0 {
		return nil
	}
	return p.mutexPool.end(h, failed)
}

func TestAccountingFailsWhenThePoolLosesReleases(t *testing.T) {
	cfg := quick(Normal)
	cfg.Pool = "mutex"
	r, err := runWith[mutexHandle](context.Background(), cfg, &leakyPool{mutexPool: newMutexPool(cfg)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Accounting.OK {
		t.Fatal("accounting passed although the pool kept a hold for every fifth release")
	}
	for _, c := range r.Accounting.Checks {
		if c.Name == "the pool agrees: no holder, no waiter, every resource back" && c.OK {
			t.Fatalf("the pool's leftover holders went unnoticed: %s", c.Detail)
		}
	}
}

func TestEventsCheckIsSkippedWhenEventsWereDropped(t *testing.T) {
	st := PoolState{Events: &EventCounts{Acquire: 1}, Dropped: 3}
	var checks []Check
	add := func(string, bool, string, ...any) { t.Fatal("events compared although some were dropped") }
	skip := func(name, format string, args ...any) {
		checks = append(checks, Check{Name: name, Skipped: true, OK: true})
	}
	checkEvents("crs", st, Requests{Acquisitions: 5}, 4, add, skip)
	if len(checks) != 1 {
		t.Fatal("the skipped check is not reported")
	}
}

func TestEventsCheckIsSkippedWithoutAnObserver(t *testing.T) {
	var skipped bool
	add := func(string, bool, string, ...any) { t.Fatal("events compared without an observer") }
	skip := func(string, string, ...any) { skipped = true }
	checkEvents("crs", PoolState{}, Requests{}, 4, add, skip)
	if !skipped {
		t.Fatal("the skipped check is not reported")
	}
}
