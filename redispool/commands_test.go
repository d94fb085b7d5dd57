package redispool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandCalls reads the server's count of calls of cmd (INFO
// commandstats; the calls that scripts make are counted apart, under
// their own names).
func commandCalls(t testing.TB, c redis.UniversalClient, cmd string) int64 {
	calls, _ := commandStats(t, c, cmd)
	return calls
}

// commandStats reads the server's count of calls of cmd and the
// microseconds it spent in them.
func commandStats(t testing.TB, c redis.UniversalClient, cmd string) (calls, usec int64) {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		for _, field := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return calls, usec
}

func TestAnUncontendedAcquireAndReleaseSendTwoCommands(t *testing.T) {
	srv := ownServer(t) // alone on its server, so that its counts are its own
	c, hook := hooked(t, srv.addr)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	mustRelease(t, mustAcquire(t, p)) // loads the scripts
	const rounds = 10
	evalsha := commandCalls(t, c, "evalsha")
	n := hook.count()
	for range rounds {
		l, err := p.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		mustRelease(t, l)
	}
	if got := hook.since(n); len(got) != 2*rounds {
		t.Fatalf("%d acquire+release sent %v, want two commands each", rounds, got)
	}
	// INFO itself is counted under its own name.
	if d := commandCalls(t, c, "evalsha") - evalsha; d != 2*rounds {
		t.Fatalf("the server ran %d EVALSHA for %d acquire+release, want %d", d, rounds, 2*rounds)
	}
}

func TestAnIdleWaiterSendsAFewCommandsASecond(t *testing.T) {
	// Real time, to see the whole cost (the client's re-checks, and the
	// pings go-redis sends on the subscription); the bound cannot fail
	// for a slow machine, only for a waiter that polls.
	srv := ownServer(t)
	c, hook := hooked(t, srv.addr)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	held := mustAcquire(t, p)
	parked := parkings(p)
	startHub(t, p)
	got := acquireAsync(p)
	receive(t, parked, "the waiter to block")
	const window = 2 * time.Second
	total := clientCommands(t, c)
	before := hook.count()
	start := time.Now()
	time.Sleep(window) // the measured idle time
	elapsed := time.Since(start)
	sent := hook.count() - before
	atServer := clientCommands(t, c) - total
	t.Logf("an idle waiter over %v: %d commands from its client (%.1f/s), %d at the server including subscription pings (%.1f/s)",
		elapsed.Round(time.Millisecond), sent, float64(sent)/elapsed.Seconds(), atServer, float64(atServer)/elapsed.Seconds())
	if limit := int(elapsed/p.recheck) + 2; sent > limit {
		t.Errorf("an idle waiter sent %d commands in %v, more than one per re-check (%v)", sent, elapsed, p.recheck)
	}
	mustRelease(t, held)
	if r := <-got; r.err != nil {
		t.Fatal(r.err)
	}
}

// clientCommands is the server's count of the commands this package's
// clients send: scripts, and pings on the subscription (INFO
// commandstats also counts the commands that scripts call).
func clientCommands(t testing.TB, c redis.UniversalClient) int64 {
	t.Helper()
	return commandCalls(t, c, "evalsha") + commandCalls(t, c, "eval") + commandCalls(t, c, "ping")
}
