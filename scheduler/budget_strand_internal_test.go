package scheduler

import (
	"cmp"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/waiting"
)

type rkey struct {
	id  string
	tpm int64
}

// A waiter queued behind an oldest one that leaves the queue to search
// again (its probe found a covering resource) must be served once it is
// the oldest and a resource covers its cost: nobody probes or kicks for
// it. In the second case only the other shard's resource covers it.
func TestAWaiterBehindAnOldestThatSearchesAgainIsServed(t *testing.T) {
	for _, c := range []struct {
		name      string
		heaps     int
		keys      []*rkey // dealt to the shards in turn
		a, b, cst int64   // the costs of A (which drains k), B and C
	}{
		{"one shard", 1, []*rkey{{id: "k", tpm: 10}}, 10, 5, 5},
		{"another shard", 2, []*rkey{{id: "k", tpm: 10}, {id: "m", tpm: 7}}, 10, 8, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			searchAgainThenServe(t, c.heaps, c.keys, c.a, c.b, c.cst)
		})
	}
}

// searchAgainThenServe has A drain k; B fail to find a resource and, as A
// refunds k before B queues, find one in its probe and search again; C
// queue behind B meanwhile. It fails unless C is served.
func searchAgainThenServe(t *testing.T, heaps int, keys []*rkey, costA, costB, costC int64) {
	s, err := New(config.Config[*rkey, string]{
		HeapCount:     heaps,
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
	for _, k := range keys {
		if err := s.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	a, err := s.Lease(ctx, WithCost(config.Cost{"tokens": costA}))
	if err != nil {
		t.Fatal(err)
	}
	var befores, queueds atomic.Int32
	cCommitted := make(chan struct{})
	cDone := make(chan error, 1)
	s.setHooks(hooks{waiting: func(at waiting.Step) {
		switch at {
		case waiting.BeforeQueue:
			if befores.Add(1) == 1 { // B, after its failed search
				if err := a.Settle(config.Cost{"tokens": 0}); err != nil {
					t.Error(err)
				}
			}
		case waiting.Queued:
			if queueds.Add(1) == 1 { // B, queued first
				go func() {
					l, err := s.Lease(ctx, WithCost(config.Cost{"tokens": costC}))
					if err == nil {
						err = l.Release()
					}
					cDone <- err
				}()
				<-cCommitted
			}
		case waiting.Committed:
			if queueds.Load() == 2 {
				select {
				case <-cCommitted:
				default:
					close(cCommitted)
				}
			}
		}
	}})
	b, err := s.Lease(ctx, WithCost(config.Cost{"tokens": costB}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	select {
	case err := <-cDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("C never served though a resource covers its cost of %d", costC)
	}
}
