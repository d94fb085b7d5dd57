package redispool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// monitored returns the commands the server ran (MONITOR, scripts'
// included) while f ran.
func monitored(t *testing.T, addr string, f func()) []string {
	t.Helper()
	// A connection of its own, read here: go-redis's Monitor reads its
	// connection in a goroutine while the client's pool may look at the
	// same buffer (a data race).
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	line := func() string {
		if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR: %v", err)
		}
		return strings.TrimSuffix(strings.TrimPrefix(l, "+"), "\r\n")
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if ok := line(); ok != "OK" {
		t.Fatalf("MONITOR replied %q", ok) // from here on, it sees every command
	}
	f()
	c := clientOf(t, addr)
	end := fmt.Sprintf("monitor-end-%d", time.Now().UnixNano())
	if err := c.Echo(context.Background(), end).Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for l := line(); !strings.Contains(l, end); l = line() {
		got = append(got, l)
	}
	return got
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
	if !slices.ContainsFunc(cmds, func(cmd string) bool { return strings.Contains(cmd, p.keys[0]) }) {
		t.Fatalf("MONITOR saw no command on %s: %q", p.keys[0], cmds)
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
