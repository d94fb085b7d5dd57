package redispool

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// loseReply is a hook that lets a matching command run on the server
// and then reports its reply lost, as a broken connection would.
type loseReply struct {
	armed atomic.Bool
}

func (h *loseReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && (strings.HasPrefix(strings.ToLower(cmd.Name()), "eval") || strings.ToLower(cmd.Name()) == "fcall") && h.armed.CompareAndSwap(true, false) {
			cmd.SetErr(io.ErrUnexpectedEOF)
			return io.ErrUnexpectedEOF
		}
		return err
	}
}

func (h *loseReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestALeaseWhoseGrantWasLostIsGivenBack(t *testing.T) {
	c := newClient(t)
	lose := &loseReply{}
	c.AddHook(lose)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	lose.armed.Store(true)
	if _, err := p.TryAcquire(context.Background()); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("TryAcquire with its reply lost: %v", err)
	}
	p.bg.Wait() // the give-back
	if s := stats(t, p); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("the lease granted to the lost request is still out: %+v", s)
	}
	checkInvariants(t, c, p)
	mustAcquire(t, p)
}

func TestARepeatedAcquireRequestGetsTheSameLease(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Capacity: 2})
	ctx := context.Background()
	grant := func() []any {
		_, reply, err := p.run(ctx, scriptAcquire, "000000000000000000000000000000ff", p.ttlMs, 0, p.proc, "", "0", "", "")
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	first, again := grant(), grant()
	if first[0] != again[0] || first[1] != again[1] {
		t.Fatalf("a resent request got %v, then %v", first, again)
	}
	if s := stats(t, p); s.Leases != 1 {
		t.Fatalf("a resent request took a second lease: %+v", s)
	}
	checkInvariants(t, c, p)
}

// An acquire request that reaches the server after its give-back (sent
// before it, on another connection, or held by the network) takes
// nothing: the give-back recorded the request as abandoned.
func TestAnAcquireArrivingAfterItsAbandonTakesNothing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	ctx := context.Background()
	const request = "000000000000000000000000000000ab"
	if _, _, err := p.run(ctx, scriptAbandon, request, request); err != nil {
		t.Fatal(err)
	}
	status, _, err := p.run(ctx, scriptAcquire, request, p.ttlMs, 0, p.proc, "", "0", "", "")
	if err != nil || status != statusNone {
		t.Fatalf("the abandoned request, arriving late: status %d, %v; want none", status, err)
	}
	if s := stats(t, p); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("stats %+v", s)
	}
	mustAcquire(t, p) // another request is served
	checkInvariants(t, c, p)
}
