package redispool

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

// ownServer starts a redis-server for this test alone, so that it can
// stop and restart it.
func ownServer(t testing.TB) *redisServer {
	t.Helper()
	needServerBinary(t)
	srv, err := startServer(0, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return srv
}

// needServerBinary skips a test that starts its own redis-server when
// there is none, or fails it under CRS_REQUIRE_REDIS=1.
func needServerBinary(t testing.TB) {
	t.Helper()
	if redisBin == "" {
		if os.Getenv(envRequire) == "1" {
			t.Fatal("this test starts its own redis-server, and there is none in PATH")
		}
		t.Skip("this test starts its own redis-server, and there is none in PATH")
	}
}

// restartable is a redis-server of the test's own that it can stop and
// start again on the same port and directory; stopped at the end.
type restartable struct {
	t     *testing.T
	args  []string
	srv   *redisServer
	alive bool
}

// ownRestartable starts a server with the extra arguments of launch.
func ownRestartable(t *testing.T, extra ...string) *restartable {
	t.Helper()
	needServerBinary(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	r := &restartable{t: t, args: extra, srv: &redisServer{port: port, dir: t.TempDir()}}
	r.start()
	t.Cleanup(func() {
		if r.alive {
			r.srv.stop()
		}
	})
	return r
}

func (r *restartable) addr() string { return r.srv.addr }

func (r *restartable) stop() {
	r.srv.stop()
	r.alive = false
}

// start starts the server (again): the same port and directory.
func (r *restartable) start() {
	r.t.Helper()
	srv, err := launch(r.srv.port, r.srv.dir, r.args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.srv, r.alive = srv, true
}

func TestARestartThatLosesTheDataExpiresLeasesAndThePoolWorksAgain(t *testing.T) {
	srv := ownServer(t)
	c := failFastClient(t, srv.addr)
	p := newPool(t, c, Options{RecheckInterval: 50 * time.Millisecond})
	other := newPool(t, failFastClient(t, srv.addr), Options{Name: p.name})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	old := mustAcquire(t, p)
	parked := parkings(p)
	waiting := acquireAsync(p)
	receive(t, parked, "the waiter to block")

	srv.stop()
	// Every operation fails, promptly, and changes nothing; a waiter
	// returns the error at its next look.
	if r := <-waiting; r.err == nil || errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("Acquire waiting while Redis is down: %v, %v", r.lease, r.err)
	}
	bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := p.TryAcquire(bounded); err == nil || errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire while Redis is down: %v", err)
	}
	if err := old.Release(bounded); err == nil || errors.Is(err, crserrors.ErrLeaseExpired) || errors.Is(err, crserrors.ErrLeaseReleased) {
		t.Fatalf("Release while Redis is down: %v", err)
	}
	if _, err := p.Stats(bounded); err == nil {
		t.Fatal("Stats while Redis is down succeeded")
	}

	restarted, err := launch(srv.port, srv.dir) // same port, no data
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restarted.stop)
	// go-redis waits a moment before it dials a server that refused it.
	waitConnected(t, c)
	waitConnected(t, other.client)
	// The lease went with the data: expired, not handed out twice.
	if err := old.Release(ctx); !errors.Is(err, crserrors.ErrLeaseExpired) {
		t.Fatalf("Release of a lease lost with the data: %v, want ErrLeaseExpired", err)
	}
	// So did the resources: Acquire says so rather than wait, and the
	// application puts them back.
	if _, err := p.TryAcquire(ctx); !errors.Is(err, ErrPoolEmpty) || !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire on the emptied pool: %v, want ErrPoolEmpty", err)
	}
	if _, err := other.Acquire(bounded); !errors.Is(err, ErrPoolEmpty) {
		t.Fatalf("Acquire on the emptied pool: %v, want ErrPoolEmpty", err)
	}
	if err := p.Sync(ctx, []Resource{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	fresh := mustAcquire(t, p)
	if fresh.Token <= old.Token {
		t.Fatalf("token %d after the restart, %d before: fencing tokens went back", fresh.Token, old.Token)
	}
	// Waiting works again (through the resubscribed channel, or the
	// re-check).
	got := acquireAsync(other)
	mustRelease(t, fresh)
	if r := <-got; r.err != nil {
		t.Fatalf("Acquire after the restart: %v", r.err)
	}
	checkInvariants(t, c, p)
}

// failFastClient gives up on an unreachable server at once (the default
// client retries each command for about a second), to keep the test short.
func failFastClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitConnected polls (bounded) until c reaches its server again.
func waitConnected(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection to the restarted server: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A pool whose scripts the server forgot (SCRIPT FLUSH, a restart)
// sends each one again, once, by EVAL after EVALSHA's NOSCRIPT.
func TestTheScriptsAreLoadedAgainWhenTheServerForgetsThem(t *testing.T) {
	srv := ownServer(t)
	admin := clientOf(t, srv.addr)
	c, hook := hooked(t, srv.addr)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"})
	mustRelease(t, mustAcquire(t, p))
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	n := hook.count()
	mustRelease(t, mustAcquire(t, p))
	mustRelease(t, mustAcquire(t, p))
	want := []string{"evalsha", "eval", "evalsha", "eval", "evalsha", "evalsha"}
	if got := hook.since(n); !equal(got, want) {
		t.Fatalf("commands %v, want %v: EVALSHA, and EVAL once per script after NOSCRIPT", got, want)
	}
	checkInvariants(t, admin, p)
}
