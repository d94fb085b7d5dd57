package redispool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// needRedis skips the test when there is no Redis to test against
// (TestMain has already failed the run if CRS_REQUIRE_REDIS=1).
func needRedis(t testing.TB) {
	t.Helper()
	if testAddr == "" {
		t.Skip(whyNoRedis)
	}
}

// newClient returns a client of the test Redis, closed at the end of the
// test.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	needRedis(t)
	return clientOf(t, testAddr)
}

func clientOf(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var poolSeq atomic.Int64

// poolName is a name no other test (nor a previous run against the same
// CRS_REDIS_ADDR) uses.
func poolName(t testing.TB) string {
	return fmt.Sprintf("redispool-test-%d-%d-%s", time.Now().UnixNano(), poolSeq.Add(1), t.Name())
}

// newPool opens a pool on c with a fresh name (unless opts has one); the
// Pool is closed and its keys deleted at the end of the test.
func newPool(t testing.TB, c redis.UniversalClient, opts Options) *Pool {
	t.Helper()
	if opts.Name == "" {
		opts.Name = poolName(t)
	}
	p, err := New(c, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		_ = c.Del(context.Background(), p.keys[:]...).Err()
	})
	return p
}

func add(t testing.TB, p *Pool, rs ...Resource) {
	t.Helper()
	for _, r := range rs {
		if err := p.Add(context.Background(), r); err != nil {
			t.Fatalf("Add(%+v): %v", r, err)
		}
	}
}

func mustAcquire(t testing.TB, p *Pool) *Lease {
	t.Helper()
	l, err := p.TryAcquire(context.Background())
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return l
}

func mustRelease(t testing.TB, l *Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release(%s #%d): %v", l.ID, l.Token, err)
	}
}

func stats(t testing.TB, p *Pool) Stats {
	t.Helper()
	s, err := p.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s
}

// poolKeys lists the keys of p's state on the server (SCAN, as an
// operator would). The records of write requests, which expire by
// themselves, are left out once checked to have a TTL of a window at
// most, and so is the last token, which stays for good.
func poolKeys(t testing.TB, c redis.UniversalClient, p *Pool) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	iter := c.Scan(ctx, 0, "{"+p.name+"}*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if k == p.keys[5] {
			continue
		}
		if !strings.HasPrefix(k, p.done) {
			keys = append(keys, k)
			continue
		}
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", k, err)
		}
		if ttl != -2 && (ttl <= 0 || ttl > RequestWindow) {
			t.Errorf("request record %s has TTL %v, want at most %v", k, ttl, RequestWindow)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return keys
}

// serverMillis is the Redis server's clock, which deadlines follow.
func serverMillis(t testing.TB, c redis.UniversalClient) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now.UnixMilli()
}

// waitServerTime polls (bounded) until the server's clock reaches ms.
func waitServerTime(t testing.TB, c redis.UniversalClient, ms int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); serverMillis(t, c) < ms; {
		if time.Now().After(deadline) {
			t.Fatalf("server clock did not reach %d", ms)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// countHook counts (and names) the commands a client sends.
type countHook struct {
	n     atomic.Int64
	mu    sync.Mutex
	names []string
}

func hooked(t testing.TB, addr string) (*redis.Client, *countHook) {
	c := clientOf(t, addr)
	h := &countHook{}
	c.AddHook(h)
	return c, h
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		h.mu.Lock()
		h.names = append(h.names, strings.ToLower(cmd.Name()))
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// since returns the names of the commands after the first n.
func (h *countHook) since(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.names[n:]...)
}

func (h *countHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.names)
}
