package scheduler

import (
	"cmp"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

type rkey struct {
	id  string
	tpm int64
}

// A waiter queued behind an oldest one that leaves the queue to search
// again (its probe found a covering resource) must be served once it is
// the oldest and a resource covers its cost: nobody probes or kicks for
// it.
func TestAWaiterBehindAnOldestThatSearchesAgainIsServed(t *testing.T) {
	s, err := New(config.Config[*rkey, string]{
		HeapCount:     1,
		AcquirePolicy: config.Shared,
		Comparator:    func(a, b *rkey) int { return cmp.Compare(a.id, b.id) },
		KeyFunc:       func(k *rkey) string { return k.id },
		Capacity:      func(*rkey) int { return 3 },
		Limits: func(k *rkey) []config.Limit {
			return []config.Limit{{Name: "tokens", Max: k.tpm, Per: time.Hour}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	if err := s.Add(&rkey{id: "k", tpm: 10}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := s.Lease(ctx, WithCost(config.Cost{"tokens": 10}))
	if err != nil {
		t.Fatal(err)
	}
	var befores, queueds atomic.Int32
	cCommitted := make(chan struct{})
	cDone := make(chan error, 1)
	s.setHooks(hooks{waiting: func(at waitStep) {
		switch at {
		case beforeQueue:
			if befores.Add(1) == 1 { // B, after its failed search
				if err := a.Settle(config.Cost{"tokens": 0}); err != nil {
					t.Error(err)
				}
			}
		case queued:
			if queueds.Add(1) == 1 { // B, queued first
				go func() {
					l, err := s.Lease(ctx, WithCost(config.Cost{"tokens": 5}))
					if err == nil {
						err = l.Release()
					}
					cDone <- err
				}()
				<-cCommitted
			}
		case committed:
			if queueds.Load() == 2 {
				select {
				case <-cCommitted:
				default:
					close(cCommitted)
				}
			}
		}
	}})
	b, err := s.Lease(ctx, WithCost(config.Cost{"tokens": 5}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	rem, _ := s.Remaining("k")
	t.Logf("B served; remaining %v, waiters %d", rem, s.waiters.Len())
	select {
	case err := <-cDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("C never served though %v tokens cover its cost of 5", rem)
	}
}
