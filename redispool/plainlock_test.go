package redispool

// The yardstick of issue 30: the plain Redis lock that people write
// instead of a shared pool, measured beside the pool by
// BenchmarkVersusLock (versus_test.go).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// plainUnlock deletes a lock key only while it holds the caller's
// token, so that a holder whose lock expired and went to someone else
// cannot release the other's.
const plainUnlock = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// errPlainLockLost: the key no longer held the releasing holder's token.
var errPlainLockLost = errors.New("plain lock: released a lock that was not held")

// plainLock is that lock over n resources: resource i is held while
// the key PREFIX:i exists, its value the holder's random token.
//
// acquire sweeps the keys once with SET NX PX, starting at a random
// index, and takes the first that is free; when every key is taken it
// sleeps a millisecond and sweeps again from a new random index. That
// is the simplest code that spreads goroutines over the resources: a
// fixed start would pile them on the first key, and one random key per
// try would sleep while others are free.
type plainLock struct {
	client *redis.Client
	keys   []string
	ttlMs  int64
	unlock string // SHA-1 of plainUnlock, loaded by newPlainLock
}

// newPlainLock loads the release script (once: every release is an
// EVALSHA) and returns a lock over resources keys named after prefix.
func newPlainLock(ctx context.Context, c *redis.Client, prefix string, resources int, ttl time.Duration) (*plainLock, error) {
	sha, err := c.ScriptLoad(ctx, plainUnlock).Result()
	if err != nil {
		return nil, fmt.Errorf("plain lock: SCRIPT LOAD: %w", err)
	}
	l := &plainLock{client: c, keys: make([]string, resources), ttlMs: ttl.Milliseconds(), unlock: sha}
	for i := range l.keys {
		l.keys[i] = prefix + ":" + strconv.Itoa(i)
	}
	return l, nil
}

// tryAcquire is one sweep; ok is false when every key was taken.
func (l *plainLock) tryAcquire(ctx context.Context) (resource int, token string, ok bool, err error) {
	token = strconv.FormatUint(rand.Uint64(), 16)
	start := rand.IntN(len(l.keys))
	for i := range l.keys {
		r := (start + i) % len(l.keys)
		err := l.client.Do(ctx, "set", l.keys[r], token, "px", l.ttlMs, "nx").Err()
		if err == nil {
			return r, token, true, nil
		}
		if !errors.Is(err, redis.Nil) {
			return 0, "", false, fmt.Errorf("plain lock: SET: %w", err)
		}
	}
	return 0, "", false, nil
}

// acquire sweeps until it gets a resource or ctx ends.
func (l *plainLock) acquire(ctx context.Context) (resource int, token string, err error) {
	for {
		r, token, ok, err := l.tryAcquire(ctx)
		if ok || err != nil {
			return r, token, err
		}
		if err := ctx.Err(); err != nil {
			return 0, "", err
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *plainLock) release(ctx context.Context, resource int, token string) error {
	n, err := l.client.EvalSha(ctx, l.unlock, []string{l.keys[resource]}, token).Int64()
	if err != nil {
		return fmt.Errorf("plain lock: release %d: %w", resource, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: %s", errPlainLockLost, l.keys[resource])
	}
	return nil
}

// held counts the keys that exist now.
func (l *plainLock) held(ctx context.Context) (int, error) {
	n := 0
	for from := 0; from < len(l.keys); from += 1000 {
		k, err := l.client.Exists(ctx, l.keys[from:min(from+1000, len(l.keys))]...).Result()
		if err != nil {
			return 0, err
		}
		n += int(k)
	}
	return n, nil
}

func TestPlainLockHoldsEachKeyOnceAndReleasesOnlyWithItsToken(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	l, err := newPlainLock(ctx, c, poolName(t), 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, token, err := l.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := l.tryAcquire(ctx); ok || err != nil {
		t.Fatalf("second tryAcquire of a held key: ok=%v err=%v, want refused", ok, err)
	}
	if err := l.release(ctx, r, token+"x"); !errors.Is(err, errPlainLockLost) {
		t.Fatalf("release with another token: %v, want errPlainLockLost", err)
	}
	if n, err := l.held(ctx); n != 1 || err != nil {
		t.Fatalf("held after a refused release: %d, %v; want 1", n, err)
	}
	if err := l.release(ctx, r, token); err != nil {
		t.Fatal(err)
	}
	if err := l.release(ctx, r, token); !errors.Is(err, errPlainLockLost) {
		t.Fatalf("second release: %v, want errPlainLockLost", err)
	}
	if n, err := l.held(ctx); n != 0 || err != nil {
		t.Fatalf("held after release: %d, %v; want 0", n, err)
	}
	r, token, ok, err := l.tryAcquire(ctx)
	if !ok || err != nil {
		t.Fatalf("tryAcquire of a released key: ok=%v err=%v", ok, err)
	}
	if err := l.release(ctx, r, token); err != nil {
		t.Fatal(err)
	}
}
