package scheduler

import (
	"cmp"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/internal/waiting"
)

// midGrantClock is a fake clock whose Now, once armed, runs atGrant the
// first time it is called with no waiter queued: with one waiter, that
// is a giver that has popped it, in grantTo, under the shard's lock.
type midGrantClock struct {
	*fakeclock.Clock
	s       *Scheduler[*rkey, string]
	armed   atomic.Bool
	atGrant func()
}

func (c *midGrantClock) Now() time.Time {
	if c.armed.Load() && c.s.room.Len() == 0 && c.armed.CompareAndSwap(true, false) {
		c.atGrant()
	}
	return c.Clock.Now()
}

// A giver that pops the only waiter and finds its budgets short of the
// waiter's cost puts it back at the front. If the waiter's context ended
// while the giver had it, the waiter found itself popped and waits for
// the giver's grant: put back, it would get one only once some resource
// covered its cost, its context long over. It must be left out of the
// queue, and its call must return the context's error.
func TestAWaiterWhoseContextEndsWhileAGiverHasItPoppedReturns(t *testing.T) {
	clock := &midGrantClock{Clock: fakeclock.New()}
	s, err := New(config.Config[*rkey, string]{
		HeapCount:     1,
		AcquirePolicy: config.Exclusive,
		Comparator:    func(a, b *rkey) int { return cmp.Compare(a.id, b.id) },
		KeyFunc:       func(k *rkey) string { return k.id },
		Clock:         clock,
		Limits: func(k *rkey) []config.Limit {
			return []config.Limit{{Name: "tokens", Max: k.tpm, Per: time.Minute}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown) // answers a waiter left queued
	clock.s = s
	if err := s.Add(&rkey{id: "k", tpm: 10}); err != nil {
		t.Fatal(err)
	}
	held, err := s.Lease(context.Background(), WithCost(config.Cost{"tokens": 5}))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	isWaiting, hasGivenUp := make(chan struct{}), make(chan struct{})
	s.setHooks(hooks{waiting: func(at waiting.Step) {
		switch at {
		case waiting.Committed:
			close(isWaiting)
		case waiting.GaveUp:
			close(hasGivenUp)
		}
	}})
	clock.atGrant = func() {
		cancel()
		<-hasGivenUp // the waiter has found itself popped
	}
	done := make(chan error, 1)
	go func() {
		// k's slot is held: the waiter commits to waiting for it.
		l, err := s.Lease(ctx, WithCost(config.Cost{"tokens": 10}))
		if err == nil {
			err = l.Release()
		}
		done <- err
	}()
	<-isWaiting
	clock.armed.Store(true)
	// The release frees k's slot, with 5 tokens left: the giver pops the
	// waiter, cannot cover its 10, and, in between, the waiter gives up.
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if clock.armed.Load() {
		t.Fatal("the release served no waiter")
	}
	if n := s.room.Len(); n != 0 {
		t.Fatalf("%d waiters queued after the only one gave up while popped", n)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lease = %v, want context.Canceled", err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
