package redispool

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
)

// aclClient creates, on srv, a user allowed every command on the pool's
// keys but no pub/sub channel, and returns a client logged in as it.
func aclClient(t *testing.T, srv *redisServer, pool string) *redis.Client {
	t.Helper()
	admin := clientOf(t, srv.addr)
	user := fmt.Sprintf("nochannel-%d", poolSeq.Add(1))
	err := admin.Do(context.Background(), "ACL", "SETUSER", user, "on", ">secret",
		"~{"+pool+"}:*", "resetchannels", "+@all").Err()
	if err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	t.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
	c := redis.NewClient(&redis.Options{Addr: srv.addr, Username: user, Password: "secret", ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A release that cannot tell a waiter's process of the grant it made
// (the user may not publish on the pool's channels) still applies its
// change and reports success: a write never applies and then fails,
// which would make its retry report the wrong outcome. The waiter finds
// its grant at its next re-check.
func TestAReleaseThatCannotTellItsGrantStillSucceeds(t *testing.T) {
	srv := ownServer(t)
	name := poolName(t)
	c := aclClient(t, srv, name)
	p := newPool(t, c, Options{Name: name})
	clock := fakeclock.New() // the waiter re-checks when the test says
	waiter := newPool(t, clientOf(t, srv.addr), Options{Name: name, Clock: clock})
	ctx := context.Background()
	if err := p.Add(ctx, Resource{ID: "a"}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	l := mustAcquire(t, p)
	parked := parkings(waiter)
	startHub(t, waiter)
	got := acquireAsync(waiter)
	receive(t, parked, "the waiter to block")
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("second Release: %v, want ErrLeaseReleased", err)
	}
	if s := stats(t, p); s.Leases != 1 || s.WakeFailures != 1 {
		t.Fatalf("stats %+v, want the lease granted to the waiter and one failed announcement", s)
	}
	clock.Advance(DefaultRecheckInterval)
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter's Acquire: %v", r.err)
	}
	if err := p.Exclude(ctx, "a"); err != nil {
		t.Fatalf("Exclude: %v", err)
	}
	if err := p.Include(ctx, "a"); err != nil {
		t.Fatalf("Include: %v", err)
	}
	if err := r.lease.Cooldown(ctx, 1); err != nil {
		t.Fatalf("Cooldown: %v", err)
	}
	if s := stats(t, p); s.Resources != 1 || s.Leases != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, clientOf(t, srv.addr), p)
}
