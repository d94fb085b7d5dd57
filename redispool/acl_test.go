package redispool

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
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

// A script that cannot announce freed slots (the user may not publish on
// the pool's channel) still applies its change and reports success: a
// write never applies and then fails, which would make its retry report
// the wrong outcome.
func TestAWriteThatCannotAnnounceFreedSlotsStillSucceeds(t *testing.T) {
	srv := ownServer(t)
	name := poolName(t)
	c := aclClient(t, srv, name)
	p := newPool(t, c, Options{Name: name})
	ctx := context.Background()
	if err := p.Add(ctx, Resource{ID: "a", Capacity: 2}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	l := mustAcquire(t, p)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("second Release: %v, want ErrLeaseReleased", err)
	}
	cooled := mustAcquire(t, p)
	if err := p.Exclude(ctx, "a"); err != nil {
		t.Fatalf("Exclude: %v", err)
	}
	if err := p.Include(ctx, "a"); err != nil {
		t.Fatalf("Include: %v", err)
	}
	if err := cooled.Cooldown(ctx, 1); err != nil {
		t.Fatalf("Cooldown: %v", err)
	}
	s := stats(t, p)
	if s.Resources != 1 || s.Leases != 0 {
		t.Fatalf("stats %+v", s)
	}
	if s.WakeFailures < 3 {
		t.Fatalf("%d failed announcements counted, want one for Add, Release and Include at least", s.WakeFailures)
	}
	checkInvariants(t, clientOf(t, srv.addr), p)
}
