package redispool

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// patientClient waits as long as the server takes (no read timeout) and
// ignores the context's deadline for I/O, as a client created without
// ContextTimeoutEnabled does: the pool alone must honour the context.
func patientClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: -1, WriteTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// stopServer stops srv (SIGSTOP) until the test ends or the returned
// function resumes it.
func stopServer(t *testing.T, srv *redisServer) (resume func()) {
	t.Helper()
	resume = func() { _ = srv.cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(resume)
	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return resume
}

// returnsBeforeTheServer waits for got while the server is still
// stalled; only a call that honours its context can arrive.
func returnsBeforeTheServer(t *testing.T, got <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-got:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return while the server stalled", what)
		return nil
	}
}

// An Acquire whose context is cancelled returns at once, even while the
// server does not answer and the client ignores contexts; the lease
// that its command gets once the server resumes is given back.
func TestACancelledAcquireReturnsWhileTheServerStallsAndLosesNoLease(t *testing.T) {
	_, c, p, resume := leaveAStalledAcquire(t, 0)
	resume()
	p.late.Wait() // the stalled command's reply, then the give-back
	if s := stats(t, p); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("the lease granted after the caller left is still out: %+v", s)
	}
	checkInvariants(t, c, p)
}

// A Release cut off from the server by a partition returns the
// context's error when its context ends; repeating it once the network
// heals reports the first attempt's outcome.
func TestAReleaseCutOffByAPartitionReturnsWithItsContext(t *testing.T) {
	needRedis(t)
	px := startProxy(t, testAddr)
	c := patientClient(t, px.addr())
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	l := mustAcquire(t, p)
	loadScripts(t, c)
	px.drain()
	px.partition()
	defer px.heal()

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { got <- l.Release(ctx) }()
	receive(t, px.passed, "the partition to hold the release command")
	cancel()
	if err := returnsBeforeTheServer(t, got, "Release"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Release: %v, want context.Canceled", err)
	}
	px.heal()
	p.late.Wait() // the held command reaches the server
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release repeated after the partition: %v, want nil", err)
	}
	if s := stats(t, p); s.Leases != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, c, p)
}

// A deadline bounds a call even when the client ignores contexts and
// the network holds the command; the lease that the command gets once
// the network heals is given back.
func TestADeadlineBoundsTryAcquireThroughAPartition(t *testing.T) {
	needRedis(t)
	px := startProxy(t, testAddr)
	c := patientClient(t, px.addr())
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	loadScripts(t, c)
	px.drain()
	px.partition()
	defer px.heal()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		l, err := p.TryAcquire(ctx)
		if l != nil {
			err = errors.New("got a lease")
		}
		got <- err
	}()
	if err := returnsBeforeTheServer(t, got, "TryAcquire"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire past its deadline: %v, want context.DeadlineExceeded", err)
	}
	px.heal()
	p.late.Wait()
	if s := stats(t, p); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("the lease granted after the deadline is still out: %+v", s)
	}
	checkInvariants(t, c, p)
}

// Close waits for an acquire command whose caller left while the server
// stalled: the lease that the command gets once the server resumes is
// given back before Close returns, so closing the client after Close (as
// a process shutting down does) leaves no lease behind.
func TestCloseWaitsForTheGiveBackOfAGrantWhoseCallerLeft(t *testing.T) {
	srv, c, p, resume := leaveAStalledAcquire(t, 0)
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	resume()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v, want nil", err)
	}
	_ = c.Close()

	other := newPool(t, clientOf(t, srv.addr), Options{Name: p.Name()})
	if s := stats(t, other); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("after Close, the lease granted after the caller left is still out: %+v", s)
	}
}

// A Close that cannot finish a give-back (the server stalls throughout)
// returns after its bound with ErrGiveBackUnfinished: the lease is left
// to its deadline, and the caller is told so.
func TestCloseReportsAGiveBackItCouldNotFinish(t *testing.T) {
	_, _, p, _ := leaveAStalledAcquire(t, 50*time.Millisecond) // the server never answers in time
	if err := p.Close(); !errors.Is(err, ErrGiveBackUnfinished) {
		t.Fatalf("Close with a give-back stalled: %v, want ErrGiveBackUnfinished", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close again: %v, want nil", err)
	}
}

// leaveAStalledAcquire opens a pool of one resource on a server of its
// own, stops the server, and calls Acquire with a context that it cancels
// once the command has reached the server; it checks that Acquire
// returned context.Canceled at once. resume lets the server answer the
// stalled command. closeWait, if not 0, bounds the pool's Close.
func leaveAStalledAcquire(t *testing.T, closeWait time.Duration) (srv *redisServer, c *redis.Client, p *Pool, resume func()) {
	t.Helper()
	srv = ownServer(t)
	px := startProxy(t, srv.addr) // to know when the command has reached the server
	c = patientClient(t, px.addr())
	p = newPool(t, c, Options{})
	if closeWait != 0 {
		p.setCloseWait(closeWait)
	}
	add(t, p, Resource{ID: "a"})
	loadScripts(t, c)
	resume = stopServer(t, srv)
	px.drain()

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		l, err := p.Acquire(ctx)
		if l != nil {
			err = errors.New("got a lease")
		}
		got <- err
	}()
	receive(t, px.passed, "the acquire command to reach the server")
	cancel()
	if err := returnsBeforeTheServer(t, got, "Acquire"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v, want context.Canceled", err)
	}
	return srv, c, p, resume
}
