package scheduler

import (
	"cmp"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/internal/waiting"
)

// A waiter parked on its own tenant's limit holds back no caller of
// another tenant, and no caller that does not wait: the free resource
// beside it goes to them. A caller of the parked tenant itself still
// queues behind it (first come, first served within a tenant).
func TestACallerThatDoesNotWaitPassesWaitersParkedOnTheirTenantsLimit(t *testing.T) {
	clock := fakeclock.New()
	s, err := New(config.Config[*rkey, string]{
		HeapCount:     1,
		AcquirePolicy: config.Exclusive,
		Clock:         clock,
		Comparator:    func(a, b *rkey) int { return cmp.Compare(a.id, b.id) },
		KeyFunc:       func(k *rkey) string { return k.id },
		Tenants: func(name string) config.Tenant {
			if name != "limited" {
				return config.Tenant{}
			}
			return config.Tenant{Limits: []config.Limit{{Name: "requests", Max: 1, Per: time.Hour}}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Add(&rkey{id: id}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := s.Lease(ctx, WithTenant("limited")) // spends its one request
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	committed := make(chan struct{}, 1)
	s.setHooks(hooks{waiting: func(at waiting.Step) {
		if at == waiting.Committed {
			committed <- struct{}{}
		}
	}})
	go func() { _, _ = s.Lease(ctx, WithTenant("limited")) }()
	<-committed // parked: its tenant has nothing left for an hour
	s.setHooks(hooks{})

	if _, err := s.Acquire(); err != nil {
		t.Fatalf("Acquire beside a waiter parked on its tenant's limit = %v, want a resource", err)
	}
	now, stop := context.WithCancel(ctx)
	stop()
	if _, err := s.Lease(now, WithTenant("other")); err != nil {
		t.Fatalf("another tenant's Lease = %v, want a resource", err)
	}
	if _, err := s.Lease(now, WithTenant("limited")); !errors.Is(err, context.Canceled) && !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("the parked tenant's own Lease = %v, want it to wait its turn", err)
	}
}
