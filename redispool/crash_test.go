package redispool

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

func TestAKilledHoldersLeasesComeBackAfterTheirTTL(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	const resources, ttl = 4, time.Second
	for i := range resources {
		add(t, p, Resource{ID: fmt.Sprintf("r%d", i)})
	}
	child := startChild(t, roleHolder, map[string]string{
		"ADDR": testAddr, "POOL": p.name, "TTL_MS": strconv.FormatInt(ttl.Milliseconds(), 10),
		"COUNT": strconv.Itoa(resources),
	})
	var maxToken uint64
	for {
		line := child.readLine(t)
		if line == "ready" {
			break
		}
		var id string
		var token uint64
		if _, err := fmt.Sscanf(line, "held %s %d", &id, &token); err != nil {
			t.Fatalf("child said %q", line)
		}
		maxToken = max(maxToken, token)
	}
	if err := child.cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup
		t.Fatal(err)
	}
	killed := time.Now()
	_ = child.wait(time.Minute)
	// Nothing special: plain Acquire calls get the resources back once
	// the dead holder's leases pass their deadline.
	for range resources {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l, err := p.Acquire(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Acquire after the holder was killed: %v", err)
		}
		if l.Token <= maxToken {
			t.Fatalf("token %d after the dead holder's %d", l.Token, maxToken)
		}
	}
	t.Logf("all %d resources back %v after kill -9 (lease TTL %v)", resources, time.Since(killed).Round(time.Millisecond), ttl)
	if s := stats(t, p); s.ExpiredLeases != resources || s.Leases != resources {
		t.Fatalf("stats %+v, want %d expired leases", s, resources)
	}
	checkInvariants(t, c, p)
}
