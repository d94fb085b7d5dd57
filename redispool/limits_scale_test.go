package redispool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// monitored returns the commands the server ran (MONITOR, scripts'
// included) while f ran.
func monitored(t *testing.T, addr string, f func()) []string {
	t.Helper()
	// MONITOR holds its connection: a client of its own, on RESP2, in
	// which go-redis reads its lines.
	watcher := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	t.Cleanup(func() { _ = watcher.Close() })
	ctx := context.Background()
	lines := make(chan string, 1024)
	mon := watcher.Monitor(ctx, lines)
	mon.Start()
	c := clientOf(t, addr) // sends the markers
	// MONITOR turns on at some point after Start: an ECHO seen in its
	// output marks where it began.
	marker := fmt.Sprintf("monitor-start-%d", time.Now().UnixNano())
	var got []string
	deadline := time.After(30 * time.Second)
	for started := false; !started; {
		if err := c.Echo(ctx, marker).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-lines:
			started = strings.Contains(l, marker)
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("MONITOR did not start")
		}
	}
	for len(lines) > 0 { // the other markers
		<-lines
	}
	f()
	end := fmt.Sprintf("monitor-end-%d", time.Now().UnixNano())
	if err := c.Echo(ctx, end).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, end) {
				mon.Stop()
				return got
			}
			got = append(got, l)
		case <-time.After(30 * time.Second):
			t.Fatal("MONITOR lost the end marker")
		}
	}
}

// A costed acquire that finds every resource busy looks at the pool's
// distinct limits to learn whether the cost can ever be covered, never
// at every resource: on a large pool that read would stall the server
// for everyone.
func TestACostedAcquireOnABusyPoolReadsNoResourceList(t *testing.T) {
	srv := ownServer(t) // MONITOR sees every client of its server
	c := clientOf(t, srv.addr)
	p := newPool(t, c, Options{})
	var rs []Resource
	for i := range 50 {
		rs = append(rs, Resource{ID: fmt.Sprint("k", i), Limits: []config.Limit{tokens(1000)}})
	}
	if err := p.Sync(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	for range rs {
		mustAcquire(t, p)
	}
	var err error
	cmds := monitored(t, srv.addr, func() {
		_, err = tryCost(t, p, config.Cost{"tokens": 10})
	})
	if !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire on a busy pool: %v, want ErrNoResourceAvailable", err)
	}
	for _, cmd := range cmds {
		lower := strings.ToLower(cmd)
		if strings.Contains(lower, `"hgetall"`) || strings.Contains(lower, `"hkeys"`) || strings.Contains(lower, `"hvals"`) {
			if strings.Contains(cmd, p.keys[0]) {
				t.Fatalf("a costed TryAcquire read every resource: %s", cmd)
			}
		}
	}
	if _, err := tryCost(t, p, config.Cost{"tokens": 1001}); !errors.Is(err, crserrors.ErrCostExceedsLimits) {
		t.Fatalf("TryAcquire above every Max on a busy pool: %v", err)
	}
	checkInvariants(t, c, p)
}
