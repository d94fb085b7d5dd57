package redispool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

// proxied returns a client of the test Redis through a new proxy, with
// go-redis's default retries, and the proxy.
func proxied(t *testing.T) (*redis.Client, *proxy) {
	t.Helper()
	needRedis(t)
	px := startProxy(t, testAddr)
	return clientOf(t, px.addr()), px
}

// A write whose reply is lost with its connection is sent again by
// go-redis; the resent command must get the first one's answer, not
// the answer to a second application.
func TestAWriteSentAgainAfterItsReplyWasLostReportsItsFirstOutcome(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(t *testing.T, p *Pool) *Lease
		write func(p *Pool, l *Lease) error
		check func(t *testing.T, s Stats)
	}{
		{"Add", nil,
			func(p *Pool, _ *Lease) error { return p.Add(ctx, Resource{ID: "b"}) },
			func(t *testing.T, s Stats) { want(t, s.Resources == 2, "two resources", s) }},
		{"Remove", nil,
			func(p *Pool, _ *Lease) error { return p.Remove(ctx, "a") },
			func(t *testing.T, s Stats) { want(t, s.Resources == 0, "no resource", s) }},
		{"Exclude", nil,
			func(p *Pool, _ *Lease) error { return p.Exclude(ctx, "a") },
			func(t *testing.T, s Stats) { want(t, s.Excluded == 1, "a excluded", s) }},
		{"Include", func(t *testing.T, p *Pool) *Lease {
			if err := p.Exclude(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			return nil
		},
			func(p *Pool, _ *Lease) error { return p.Include(ctx, "a") },
			func(t *testing.T, s Stats) { want(t, s.Available == 1, "a back", s) }},
		{"Release", func(t *testing.T, p *Pool) *Lease { return mustAcquire(t, p) },
			func(_ *Pool, l *Lease) error { return l.Release(ctx) },
			func(t *testing.T, s Stats) { want(t, s.Leases == 0 && s.Available == 1, "the lease ended", s) }},
		{"Cooldown", func(t *testing.T, p *Pool) *Lease { return mustAcquire(t, p) },
			func(_ *Pool, l *Lease) error { return l.Cooldown(ctx, time.Hour) },
			func(t *testing.T, s Stats) {
				want(t, s.Leases == 0 && s.Suspended == 1, "the lease ended, a suspended", s)
			}},
		{"Fail", func(t *testing.T, p *Pool) *Lease { return mustAcquire(t, p) },
			func(_ *Pool, l *Lease) error { return l.Fail(ctx) },
			func(t *testing.T, s Stats) { want(t, s.Leases == 0 && s.Available == 1, "the lease ended", s) }},
		{"Extend", func(t *testing.T, p *Pool) *Lease { return mustAcquire(t, p) },
			func(_ *Pool, l *Lease) error { return l.Extend(ctx, time.Hour) },
			func(t *testing.T, s Stats) { want(t, s.Leases == 1, "the lease running", s) }},
		{"Update", nil,
			func(p *Pool, _ *Lease) error { return p.Update(ctx, "a", 5) },
			func(t *testing.T, s Stats) { want(t, s.Available == 1, "a available", s) }},
		{"Suspend", nil,
			func(p *Pool, _ *Lease) error { return p.Suspend(ctx, "a", time.Hour) },
			func(t *testing.T, s Stats) { want(t, s.Suspended == 1, "a suspended", s) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, px := proxied(t)
			p := newPool(t, c, Options{})
			add(t, p, Resource{ID: "a"})
			var l *Lease
			if tc.setup != nil {
				l = tc.setup(t, p)
			}
			loadScripts(t, c) // so that the lost reply is the script's, not NOSCRIPT
			px.loseReplies(1)
			if err := tc.write(p, l); err != nil {
				t.Fatalf("%s with its first reply lost: %v", tc.name, err)
			}
			if n := px.lost.Load(); n != 1 {
				t.Fatalf("%d replies lost, want 1", n)
			}
			tc.check(t, stats(t, p))
			checkInvariants(t, c, p)
		})
	}
}

func want(t *testing.T, ok bool, what string, s Stats) {
	t.Helper()
	if !ok {
		t.Fatalf("want %s: %+v", what, s)
	}
}

// allScripts are the pool's scripts.
var allScripts = []script{scriptAcquire, scriptAbandon, scriptRelease, scriptCooldown, scriptExtend,
	scriptAdd, scriptUpdate, scriptRemove, scriptExclude, scriptInclude, scriptSuspend, scriptSync,
	scriptSynced, scriptStats, scriptSettle, scriptFail, scriptRemain, scriptObserve, scriptTenants}

// loadScripts loads every script of the pool on c's server.
func loadScripts(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	for _, s := range allScripts {
		if err := s.Load(context.Background(), c).Err(); err != nil {
			t.Fatalf("SCRIPT LOAD %s: %v", s.name, err)
		}
	}
}

// A Release that returned the client's error (its reply lost, and the
// client does not send commands again) may have been applied; repeating
// it on the same handle reports its first outcome, not ErrLeaseExpired.
func TestARepeatedReleaseAfterAnUnknownOutcomeReportsTheFirst(t *testing.T) {
	needRedis(t)
	px := startProxy(t, testAddr)
	c := redis.NewClient(&redis.Options{Addr: px.addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	l := mustAcquire(t, p)
	loadScripts(t, c)
	px.loseReplies(1)
	err := l.Release(ctx)
	if err == nil || errors.Is(err, crserrors.ErrLeaseExpired) {
		t.Fatalf("Release with its reply lost: %v, want the connection's error", err)
	}
	if s := stats(t, p); s.Leases != 0 {
		t.Fatalf("the first Release was not applied, the test needs it: %+v", s)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("repeated Release: %v, want nil (the first was applied)", err)
	}
	if err := l.Release(ctx); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("Release after the repeat: %v, want ErrLeaseReleased", err)
	}
	checkInvariants(t, c, p)
}

// Through a connection that breaks again and again, no Release made in
// time reports ErrLeaseExpired, and no lease stays taken: every write
// gets the outcome of its first application, and a grant whose reply
// was lost is given back.
func TestReleasesThroughResetConnectionsNeverReportExpiry(t *testing.T) {
	c, px := proxied(t)
	px.latency.Store(int64(time.Millisecond))
	p := newPool(t, c, Options{LeaseTTL: time.Hour}) // no lease ends by its deadline
	add(t, p, Resource{ID: "a", Capacity: 2}, Resource{ID: "b", Capacity: 2})

	// Reset every connection every few milliseconds, until the workers
	// are done (or a bounded number of times).
	stop := make(chan struct{})
	resetsDone := make(chan int)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		n := 0
		for ; n < 2000; n++ {
			select {
			case <-stop:
				resetsDone <- n
				return
			case <-tick.C:
				px.resetAll()
			}
		}
		resetsDone <- n
	}()

	const workers, cycles, attempts = 4, 25, 50
	errs := make(chan error, workers)
	for range workers {
		go func() {
			errs <- func() error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				for range cycles {
					var l *Lease
					for try := 0; l == nil; try++ {
						var err error
						if l, err = p.Acquire(ctx); err != nil && (try == attempts || ctx.Err() != nil) {
							return fmt.Errorf("Acquire: %w", err)
						}
					}
					for try := 0; ; try++ {
						err := l.Release(ctx)
						if err == nil {
							break
						}
						if errors.Is(err, crserrors.ErrLeaseExpired) || errors.Is(err, crserrors.ErrLeaseReleased) || try == attempts {
							return fmt.Errorf("Release #%d of a lease held for moments: %w", try+1, err)
						}
					}
				}
				return nil
			}()
		}()
	}
	var failed error
	for range workers {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	close(stop)
	resets := <-resetsDone
	if failed != nil {
		t.Fatal(failed)
	}
	p.bg.Wait() // the give-back of grants whose reply was lost
	s := stats(t, p)
	t.Logf("%d resets", resets)
	if s.Leases != 0 || s.Available != 2 {
		t.Fatalf("leases left taken after every holder released: %+v", s)
	}
	checkInvariants(t, clientOf(t, testAddr), p)
}

// A write request's record is a key of its own that expires a window
// after the write, after which the same request is a new one.
func TestARequestRecordExpiresAfterItsWindow(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	const request = "0123456789abcdef0123456789abcdef"
	if _, _, err := p.run(ctx, scriptAdd, request, "a", "1", 1); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, p.done+request).Val(); ttl <= 0 || ttl > RequestWindow {
		t.Fatalf("the record expires in %v, want within RequestWindow", ttl)
	}
	const window = 50 // ms: the window of every later call of this handle
	p.setRequestWindow(window)
	if _, _, err := p.run(ctx, scriptRemove, request+"1", "a"); err != nil {
		t.Fatal(err)
	}
	written := serverMillis(t, c)
	waitServerTime(t, c, written+2*window)
	if _, _, err := p.run(ctx, scriptRemove, request+"1", "a"); !errors.Is(err, crserrors.ErrResourceNotFound) {
		t.Fatalf("the request sent again after its window: %v, want ErrResourceNotFound (applied again)", err)
	}
	poolKeys(t, c, p)
}

// An acquire whose reply is lost and which go-redis sends again gets the
// lease it was granted, and no second one.
func TestAnAcquireSentAgainAfterItsReplyWasLostGetsOneLease(t *testing.T) {
	c, px := proxied(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Capacity: 2})
	loadScripts(t, c)
	px.loseReplies(1)
	l := mustAcquire(t, p)
	if n := px.lost.Load(); n != 1 {
		t.Fatalf("%d replies lost, want 1", n)
	}
	if s := stats(t, p); s.Leases != 1 {
		t.Fatalf("a resent acquire took %d leases: %+v", s.Leases, s)
	}
	mustRelease(t, l)
	checkInvariants(t, c, p)
}
