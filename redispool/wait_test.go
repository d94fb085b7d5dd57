package redispool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
)

// parkings returns a channel that receives each time a waiter of p is
// about to block.
func parkings(p *Pool) <-chan struct{} {
	ch := make(chan struct{}, 1024)
	p.onParked(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch
}

// startHub opens p's subscription and waits until the server confirms
// it, so that waiters started afterwards are not woken by the
// confirmation.
func startHub(t *testing.T, p *Pool) {
	t.Helper()
	w := p.hub.join(newRequest())
	p.hub.queued(w)
	p.hub.leave(w)
	select {
	case <-p.hub.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription was not confirmed")
	}
}

func receive(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

type acquired struct {
	lease *Lease
	err   error
}

// acquireAsync starts an Acquire with a generous bound on its wait (the
// bound only stops a broken test).
func acquireAsync(p *Pool) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := p.Acquire(ctx)
		ch <- acquired{l, err}
	}()
	return ch
}

func TestAWaiterIsWokenByWhatFreesASlot(t *testing.T) {
	// The waiter never re-checks on its own (RecheckInterval is an
	// hour): only the announcement of an event, or for what the server
	// does by itself its known time, can wake it. The pool has "held",
	// leased by another client, and "spare", out of the pool.
	cases := []struct {
		name     string
		leaseTTL time.Duration                            // of the other client's lease
		setOut   func(ctx context.Context, p *Pool) error // takes spare out
		event    func(t *testing.T, other *Pool, held *Lease)
	}{
		{"release from another client", 0, exclude("spare"),
			func(t *testing.T, other *Pool, held *Lease) { mustRelease(t, held) }},
		{"add", 0, exclude("spare"),
			func(t *testing.T, other *Pool, held *Lease) { add(t, other, Resource{ID: "new"}) }},
		{"include", 0, exclude("spare"),
			func(t *testing.T, other *Pool, held *Lease) {
				if err := other.Include(context.Background(), "spare"); err != nil {
					t.Fatal(err)
				}
			}},
		{"end of a suspension", 0,
			func(ctx context.Context, p *Pool) error { return p.Suspend(ctx, "spare", 100*time.Millisecond) },
			nil},
		{"lease deadline", 100 * time.Millisecond, exclude("spare"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			waiter := newPool(t, newClient(t), Options{RecheckInterval: time.Hour})
			other := newPool(t, newClient(t), Options{Name: waiter.name, LeaseTTL: tc.leaseTTL})
			add(t, other, Resource{ID: "held"}, Resource{ID: "spare", Priority: 1})
			if err := tc.setOut(ctx, other); err != nil {
				t.Fatal(err)
			}
			held := mustAcquire(t, other)
			parked := parkings(waiter)
			startHub(t, waiter)
			got := acquireAsync(waiter)
			receive(t, parked, "the waiter to block")
			if tc.event != nil {
				tc.event(t, other, held)
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("Acquire: %v", r.err)
			}
			t.Logf("woken with %s #%d", r.lease.ID, r.lease.Token)
			mustRelease(t, r.lease)
		})
	}
}

func exclude(id string) func(ctx context.Context, p *Pool) error {
	return func(ctx context.Context, p *Pool) error { return p.Exclude(ctx, id) }
}

func TestWaitersOfAProcessAreServedOldestFirst(t *testing.T) {
	clock := fakeclock.New() // no re-check fires: only wake-ups
	waiter := newPool(t, newClient(t), Options{Clock: clock})
	other := newPool(t, newClient(t), Options{Name: waiter.name})
	add(t, other, Resource{ID: "a"})
	held := mustAcquire(t, other)
	parked := parkings(waiter)
	startHub(t, waiter)
	var results []<-chan acquired
	for i := range 3 {
		results = append(results, acquireAsync(waiter))
		receive(t, parked, "waiter to block")
		if n := waiter.hub.waiting(); n != i+1 {
			t.Fatalf("%d waiters queued, want %d", n, i+1)
		}
	}
	mustRelease(t, held)
	for i, ch := range results {
		r := <-ch
		if r.err != nil {
			t.Fatalf("waiter %d: %v", i, r.err)
		}
		for j, later := range results[i+1:] {
			select {
			case r := <-later:
				t.Fatalf("waiter %d served before waiter %d (%v)", i+j+1, i, r.err)
			default:
			}
		}
		mustRelease(t, r.lease)
	}
}

func TestAcquireReturnsTheContextErrorWhenItEnds(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	add(t, p, Resource{ID: "a"})
	held := mustAcquire(t, p)
	parked := parkings(p)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx)
		got <- err
	}()
	receive(t, parked, "the waiter to block")
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire after cancel: %v, want context.Canceled", err)
	}
	if n := p.hub.waiting(); n != 0 {
		t.Fatalf("%d waiters left queued", n)
	}
	if s := stats(t, p); s.Leases != 1 {
		t.Fatalf("the cancelled wait changed the pool: %+v", s)
	}
	mustRelease(t, held)
}

func TestCloseEndsWaitsButNotLeases(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	held := mustAcquire(t, p)
	parked := parkings(p)
	got := acquireAsync(p)
	receive(t, parked, "the waiter to block")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-got; !errors.Is(r.err, crserrors.ErrSchedulerClosed) {
		t.Fatalf("waiting Acquire after Close: %v", r.err)
	}
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrSchedulerClosed) {
		t.Fatalf("TryAcquire after Close: %v", err)
	}
	if _, err := p.Acquire(ctx); !errors.Is(err, crserrors.ErrSchedulerClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// A closing process still gives back what it holds.
	mustRelease(t, held)
	if s := stats(t, p); s.Available != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestAnIdleWaiterSendsOneCommandPerRecheck(t *testing.T) {
	clock := fakeclock.New()
	c, hook := hooked(t, testAddrOrSkip(t))
	p := newPool(t, c, Options{Clock: clock, RecheckInterval: time.Second})
	add(t, p, Resource{ID: "a"})
	held := mustAcquire(t, p)
	parked := parkings(p)
	startHub(t, p)
	got := acquireAsync(p)
	receive(t, parked, "the waiter to block")
	before := hook.count()
	const rechecks = 5
	for range rechecks {
		clock.Advance(time.Second)
		receive(t, parked, "the waiter to block again")
	}
	if cmds := hook.since(before); len(cmds) != rechecks {
		t.Fatalf("%d re-checks sent %d commands %v, want one each", rechecks, len(cmds), cmds)
	}
	mustRelease(t, held)
	if r := <-got; r.err != nil {
		t.Fatal(r.err)
	}
}

func testAddrOrSkip(t *testing.T) string {
	needRedis(t)
	return testAddr
}

// The waiter that becomes its process's oldest when the one before it
// is served takes over the watch on the server's own schedule: a lease
// that runs out after that reaches it without a re-check interval.
func TestANewOldestWaiterWatchesTheLeaseDeadlines(t *testing.T) {
	waiter := newPool(t, newClient(t), Options{RecheckInterval: time.Hour})
	other := newPool(t, newClient(t), Options{Name: waiter.name})
	expiring := newPool(t, newClient(t), Options{Name: waiter.name, LeaseTTL: 2 * time.Second})
	add(t, other, Resource{ID: "released"}, Resource{ID: "expiring", Priority: 1})
	held := mustAcquire(t, other)
	mustAcquire(t, expiring) // never released: it runs out
	parked := parkings(waiter)
	startHub(t, waiter)
	first := queueAsync(t, waiter, parked)
	second := queueAsync(t, waiter, parked)
	mustRelease(t, held)
	l := expectOnly(t, first, second)
	// Only the lease that runs out can serve the second now.
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatalf("second waiter: %v", r.err)
		}
		mustRelease(t, r.lease)
	case <-time.After(20 * time.Second):
		t.Fatal("the lease that ran out did not reach the new oldest waiter")
	}
	mustRelease(t, l)
}

// jumpClock is a fake clock that reaches the deadline of every timer
// just before the timer is set, as a clock advanced by another
// goroutine between a waiter's reading of the time and its arming of
// the timer would.
type jumpClock struct{ *fakeclock.Clock }

func (c jumpClock) AfterFunc(d time.Duration, f func()) config.Timer {
	c.Advance(d)
	return c.Clock.AfterFunc(d, f)
}

func TestAWaitWhoseClockPassesTheRecheckAsItsTimerIsSetRechecks(t *testing.T) {
	p := &Pool{clock: jumpClock{fakeclock.New()}, recheck: time.Second, hub: newHub(nil, "unused")}
	w := p.hub.join(newRequest())
	// The bound only stops a wait that missed its re-check.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if g, err := p.wait(ctx, w); g != nil || err != nil {
		t.Fatalf("wait: %v, %v; want the re-check due", g, err)
	}
}

func TestTheSubscriptionIsReadyOnlyOnceItsWaitersWereToldToLookAgain(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	w := p.hub.join(newRequest())
	defer p.hub.leave(w)
	p.hub.queued(w)
	receive(t, p.hub.ready, "the subscription to be confirmed")
	select {
	case <-w.recheck:
	default:
		t.Fatal("ready before the waiter registered then was told to look again")
	}
}
