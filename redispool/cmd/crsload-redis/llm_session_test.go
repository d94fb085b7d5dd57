package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/loadtest"
	"github.com/crsched/crs/redispool"
	"github.com/redis/go-redis/v9"
)

// A run killed before its end leaves its keys in the pool (main.go: "the
// pool's resources stay for the next run to reuse"), with the limits it
// had. The next run on that pool with other -tpm must not lease on the
// old buckets: it either sets them to its own limits or refuses to run.
func TestAnLLMRunDoesNotKeepAnEarlierRunsLimits(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	mock := mockProvider(t, 0)
	c := redis.NewClient(&redis.Options{Addr: testAddr})
	defer c.Close()
	p, err := redispool.New(c, redispool.Options{Name: pool})
	if err != nil {
		t.Fatal(err)
	}
	old := []config.Limit{{Name: "requests", Max: 600, Per: time.Minute}, {Name: "tokens", Max: 100 * mockTPM, Per: time.Minute}}
	for _, id := range []string{"key-01", "key-02"} {
		if err := p.Add(context.Background(), redispool.Resource{ID: id, Capacity: redispool.MaxCapacity, Limits: old}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	var lr loadtest.LLMReport
	err = runJSON(t.TempDir(), &lr, llmArgs(pool, mock.URL)...)
	if err != nil {
		return // refused, or failed its checks: either says the pool is not this run's
	}
	if n := mock.Stats().Total.RateLimited; n != 0 {
		t.Errorf("the run leased on the earlier run's limits of %d tokens a minute: the provider sent %d 429s", 100*mockTPM, n)
	}
}

// key-01 is each process's first key: processes that list the keys in
// another order (or list other keys) keep one bucket in Redis for two of
// the provider's keys. A process that disagrees with the session's keys
// must be refused, as one that disagrees on -rpm or -tpm is.
func TestProcessesWithTheKeysInAnotherOrderAreRefused(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	mock := mockProvider(t, 0)
	orders := []string{"sk-mock-1,sk-mock-2", "sk-mock-2,sk-mock-1"}
	errs := make([]error, len(orders))
	var wg sync.WaitGroup
	for i, keys := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lr loadtest.LLMReport
			errs[i] = runJSON(t.TempDir(), &lr, append(llmArgs(pool, mock.URL), "-keys", keys, "-redis-wait", "5s")...)
		}()
	}
	wg.Wait()
	if errs[0] == nil && errs[1] == nil {
		t.Errorf("processes with -keys %q and %q shared the pool's key-01", orders[0], orders[1])
	}
}
