package redispool

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
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

// A pool runs only code it loaded itself. A co-tenant allowed nothing
// but its own pool's keys and channels (and no @dangerous command) can
// still FUNCTION FLUSH, SCRIPT FLUSH and FUNCTION LOAD REPLACE any library: here
// one under the name, and with the functions, that this package's
// library had when pools called it by FCALL, each of which marks the
// keys it is given. No pool runs it, whether the library was there
// before the pool's first call or came after it, and whatever the pool's
// user may do with functions: the pool reloads its own scripts.
func TestAPoolNeverRunsALibraryAnotherUserReplaced(t *testing.T) {
	for _, user := range []struct {
		name   string
		rights []string // besides its pool's keys and channels
	}{
		{"may load functions", []string{"+@all", "-@dangerous"}},
		{"may only call them", []string{"+@all", "-@dangerous", "-function"}},
		{"as the README says", poolUserRights},
	} {
		for _, first := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/planted first %v", user.name, first), func(t *testing.T) {
				srv := ownServer(t) // libraries and users are the server's, not a pool's
				admin := clientOf(t, srv.addr)
				attacker := tenant(t, srv, "attacker", "+@all", "-@dangerous")
				victim := newPool(t, tenant(t, srv, "victim", user.rights...), Options{Name: "victim"})
				ctx := context.Background()
				attack := func() {
					for _, err := range []error{attacker.FunctionFlush(ctx).Err(), attacker.ScriptFlush(ctx).Err(),
						attacker.FunctionLoadReplace(ctx, hostileLibrary()).Err()} {
						if err != nil {
							t.Fatalf("the attack: %v", err)
						}
					}
				}
				if first {
					attack()
				}
				add(t, victim, Resource{ID: "a"})
				mustRelease(t, mustAcquire(t, victim))
				if !first {
					attack()
				}
				l, err := victim.Acquire(ctx)
				if pwned, err := admin.HExists(ctx, victim.keys[0], "pwned").Result(); err != nil || pwned {
					t.Fatalf("the attacker's code ran in the victim's pool (%v)", err)
				}
				if err != nil {
					t.Fatalf("the victim's Acquire: %v", err)
				}
				mustRelease(t, l)
				checkInvariants(t, admin, victim)
			})
		}
	}
}

// poolUserRights are the commands that the ACL recipe of README.md
// allows a pool's user.
var poolUserRights = []string{"+@all", "-@dangerous", "-@scripting", "+eval", "+evalsha"}

// tenant creates, on srv, a user allowed the keys and channels of pool
// alone and the given commands, and returns a client logged in as it.
func tenant(t *testing.T, srv *redisServer, pool string, commands ...string) *redis.Client {
	t.Helper()
	admin := clientOf(t, srv.addr)
	args := []any{"ACL", "SETUSER", pool, "on", ">secret", "resetkeys", "~{" + pool + "}:*", "resetchannels", "&{" + pool + "}:*", "-@all"}
	for _, c := range commands {
		args = append(args, c)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", pool, err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.addr, Username: pool, Password: "secret", ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// hostileLibrary is a library under the name that this package's
// library had (crs_redispool_ and a digest of its code), with its
// functions, each of which marks the first key it is given.
func hostileLibrary() string {
	var code strings.Builder
	code.WriteString(helpers)
	for _, s := range allScripts {
		code.WriteString(operation(s.name))
	}
	sum := sha1.Sum([]byte(code.String()))
	name := "crs_redispool_" + hex.EncodeToString(sum[:6])
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%s\n", name)
	b.WriteString("local function mark(keys) redis.call('HSET', keys[1], 'pwned', '1') return redis.error_reply('ran the library of another user') end\n")
	for _, s := range allScripts {
		fmt.Fprintf(&b, "redis.register_function('%s_%s', mark)\n", name, s.name)
	}
	return b.String()
}
