package redispool

import (
	"context"
	"errors"
	"testing"
	"time"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
)

// Two Pool values of one pool stand for two processes: each has its own
// id and channel, and shares nothing with the other but the server.

// queueAsync starts an Acquire on p and returns once it waits in the
// server's queue (p's parked hook, which must be set).
func queueAsync(t *testing.T, p *Pool, parked <-chan struct{}) <-chan acquired {
	t.Helper()
	ch := acquireAsync(p)
	receive(t, parked, "the waiter to block")
	return ch
}

// expectOnly receives the result of want and checks that none of the
// others has returned.
func expectOnly(t *testing.T, want <-chan acquired, others ...<-chan acquired) *Lease {
	t.Helper()
	var r acquired
	select {
	case r = <-want:
	case <-time.After(30 * time.Second):
		t.Fatal("the oldest waiter was not served")
	}
	if r.err != nil {
		t.Fatalf("the oldest waiter: %v", r.err)
	}
	for i, o := range others {
		select {
		case r := <-o:
			t.Fatalf("younger waiter %d served too: %v, %v", i, r.lease, r.err)
		default:
		}
	}
	return r.lease
}

func TestAFreedSlotGoesToTheOldestWaiterOfAnyProcess(t *testing.T) {
	opts := Options{RecheckInterval: time.Hour} // only grants wake them
	a := newPool(t, newClient(t), opts)
	opts.Name = a.name
	b := newPool(t, newClient(t), opts)
	add(t, a, Resource{ID: "r"})
	held := mustAcquire(t, a)
	parkedA, parkedB := parkings(a), parkings(b)
	startHub(t, a)
	startHub(t, b)
	a1 := queueAsync(t, a, parkedA)
	b1 := queueAsync(t, b, parkedB)
	a2 := queueAsync(t, a, parkedA)
	mustRelease(t, held)
	l := expectOnly(t, a1, b1, a2)
	mustRelease(t, l)
	l = expectOnly(t, b1, a2)
	mustRelease(t, l)
	l = expectOnly(t, a2)
	checkInvariants(t, newClient(t), a)
	mustRelease(t, l)
}

// A slot that the server frees by itself (a lease past its deadline)
// goes to the waiter that was there first, not to the call that makes
// the server notice.
func TestANewAcquireDoesNotJumpTheQueue(t *testing.T) {
	clock := fakeclock.New() // the waiter never looks again by itself
	waiter := newPool(t, newClient(t), Options{Clock: clock})
	other := newPool(t, newClient(t), Options{Name: waiter.name})
	add(t, other, Resource{ID: "r"})
	c := newClient(t)
	expiring := mustAcquire(t, other)
	parked := parkings(waiter)
	startHub(t, waiter)
	first := queueAsync(t, waiter, parked)
	// Shortened only now: a lease that ran out before the waiter
	// looked would have been its at once.
	if err := expiring.Extend(context.Background(), 50*time.Millisecond); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	waitServerTime(t, c, serverMillis(t, c)+60)
	if l, err := other.TryAcquire(context.Background()); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire while a waiter is queued: %v, %v; want ErrNoResourceAvailable", l, err)
	}
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if l, err := other.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire behind the waiter: %v, %v; want the deadline", l, err)
	}
	l := expectOnly(t, first)
	if l.Token <= expiring.Token {
		t.Fatalf("token %d after %d", l.Token, expiring.Token)
	}
	other.bg.Wait() // the timed-out Acquire's give-up
	checkInvariants(t, c, waiter)
	mustRelease(t, l)
}

func TestACancelledWaiterLeavesTheQueue(t *testing.T) {
	opts := Options{RecheckInterval: time.Hour}
	p := newPool(t, newClient(t), opts)
	c := newClient(t)
	add(t, p, Resource{ID: "r"})
	held := mustAcquire(t, p)
	parked := parkings(p)
	startHub(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx)
		gone <- err
	}()
	receive(t, parked, "the waiter to block")
	next := queueAsync(t, p, parked)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v", err)
	}
	// Its give-up runs in the background (p.bg also counts the other
	// waiter, which stays).
	for limit := time.Now().Add(30 * time.Second); len(readState(t, c, p).queue) != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(limit) {
			t.Fatalf("queue after the cancel: %v, want the other waiter alone", readState(t, c, p).queue)
		}
	}
	mustRelease(t, held)
	mustRelease(t, expectOnly(t, next))
	checkInvariants(t, c, p)
}

// queueRequest puts request in p's queue as a waiter of process proc
// whose entry holds for entry, as a process that will never pick up its
// grant would.
func queueRequest(t *testing.T, p *Pool, request, proc string, entry time.Duration) {
	t.Helper()
	status, _, err := p.run(context.Background(), scriptAcquire, request, p.ttlMs, millis(entry), proc, "", "0", "", "")
	if err != nil || status != statusQueued {
		t.Fatalf("queueing %s: status %d, %v", request, status, err)
	}
}

func TestASlotGrantedToAWaiterThatLeftComesBack(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	c := newClient(t)
	ctx := context.Background()
	add(t, p, Resource{ID: "r"})
	held := mustAcquire(t, p)
	const left = "0000000000000000000000000000001e"
	queueRequest(t, p, left, "gone", time.Hour)
	mustRelease(t, held)
	if s := stats(t, p); s.Leases != 1 || s.Available != 0 {
		t.Fatalf("stats after the release: %+v, want the slot granted to the waiter", s)
	}
	// Its process gives it up (its Acquire returned meanwhile).
	if _, _, err := p.run(ctx, scriptAbandon, left, left); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, p); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("stats after the give-up: %+v, want the slot back", s)
	}
	checkInvariants(t, c, p)
}

// A waiter whose process died stops re-checking: once its entry has
// expired, no slot is granted to it.
func TestAWaiterThatStoppedRecheckingGetsNoSlot(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	c := newClient(t)
	add(t, p, Resource{ID: "r"})
	held := mustAcquire(t, p)
	queueRequest(t, p, "0000000000000000000000000000002e", "dead", 10*time.Millisecond)
	waitServerTime(t, c, serverMillis(t, c)+20)
	mustRelease(t, held)
	if s := stats(t, p); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("stats %+v, want the slot available", s)
	}
	checkInvariants(t, c, p)
	mustRelease(t, mustAcquire(t, p))
}

// A grant whose message is lost (the waiter's subscription was cut when
// it was sent) reaches the waiter at its next re-check, with the same
// request.
func TestAWaiterWhoseGrantMessageWasLostGetsItAtItsRecheck(t *testing.T) {
	clock := fakeclock.New()
	p := newPool(t, newClient(t), Options{Clock: clock})
	other := newPool(t, newClient(t), Options{Name: p.name})
	add(t, other, Resource{ID: "r"})
	held := mustAcquire(t, other)
	parked := parkings(p)
	startHub(t, p)
	got := queueAsync(t, p, parked)
	// The message reaches no waiter: as if the subscription were cut
	// when it was sent. A marker published after it, which the hub
	// receives after it (one subscription delivers in order), tells
	// when the hub has dropped it.
	marker := &waiter{request: newRequest(), grant: make(chan grantMsg, 1)}
	ws := p.hub.swapWaiters(map[string]*waiter{marker.request: marker})
	mustRelease(t, held)
	if s := stats(t, other); s.Leases != 1 {
		t.Fatalf("stats %+v, want the slot granted to the waiter", s)
	}
	if err := newClient(t).Publish(context.Background(), p.hub.channel, marker.request+" 0 marker").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-marker.grant:
	case <-time.After(30 * time.Second):
		t.Fatal("the marker did not arrive")
	}
	p.hub.swapWaiters(ws)
	select {
	case r := <-got:
		t.Fatalf("served without its message: %v, %v", r.lease, r.err)
	default:
	}
	clock.Advance(DefaultRecheckInterval)
	l := expectOnly(t, got)
	mustRelease(t, l)
	checkInvariants(t, newClient(t), other)
}

// A release sent again with the same request (its reply was lost) is
// answered from the record: it does not end the lease it granted to
// the oldest waiter, nor grant the slot a second time.
func TestAResentReleaseDoesNotHandOverTwice(t *testing.T) {
	p := newPool(t, newClient(t), Options{})
	c := newClient(t)
	ctx := context.Background()
	add(t, p, Resource{ID: "r"})
	held := mustAcquire(t, p)
	const first, second = "0000000000000000000000000000003a", "0000000000000000000000000000003b"
	queueRequest(t, p, first, "p1", time.Hour)
	queueRequest(t, p, second, "p2", time.Hour)
	const release = "0000000000000000000000000000003c"
	for i := range 2 {
		status, _, err := p.run(ctx, scriptRelease, release, held.member)
		if err != nil || status != statusOK {
			t.Fatalf("release %d: status %d, %v", i, status, err)
		}
	}
	s := readState(t, c, p)
	if len(s.leases) != 1 || len(s.queue) != 1 || s.queue[0].Member != second {
		t.Fatalf("after a release and its copy: leases %v, queue %v; want one lease and the second waiter queued", s.leases, s.queue)
	}
	if _, ok := s.req[first]; !ok || s.req[first] == "" || s.req[first][0] == 'q' {
		t.Fatalf("the first waiter's entry %q, want its lease", s.req[first])
	}
	checkInvariants(t, c, p)
}

// A lease handed to a waiter that queued longer ago than its LeaseTTL
// runs from the grant, not from the waiter's first look: its Deadline
// must not be in the past when Acquire returns it.
func TestALeaseGrantedAfterALongWaitHasItsDeadlineAhead(t *testing.T) {
	const ttl = 300 * time.Millisecond
	// The fake clock keeps the waiter from re-checking: the grant
	// message is all it hears.
	waiter := newPool(t, newClient(t), Options{LeaseTTL: ttl, Clock: fakeclock.New()})
	holder := newPool(t, newClient(t), Options{Name: waiter.name})
	add(t, holder, Resource{ID: "r"})
	c := newClient(t)
	held := mustAcquire(t, holder)
	parked := parkings(waiter)
	startHub(t, waiter)
	queuedAt := serverMillis(t, c)
	ch := queueAsync(t, waiter, parked)
	waitServerTime(t, c, queuedAt+2*ttl.Milliseconds())
	mustRelease(t, held)
	l := expectOnly(t, ch)
	if left := time.Until(l.Deadline()); left <= 0 {
		t.Fatalf("Deadline %v behind when Acquire returned; the lease runs %v from its grant", -left, ttl)
	}
	mustRelease(t, l)
}
