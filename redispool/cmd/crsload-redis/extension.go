package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/loadtest"
	"github.com/crsched/crs/redispool"
)

// Defaults of the Redis run (see the package comment).
const (
	defaultWorkers  = 200
	defaultPoolName = "crsload"
	defaultWait     = 30 * time.Second
)

// redisFlags are the settings of the Redis pool.
type redisFlags struct {
	addr string        // -redis: host:port; "" runs the in-process scheduler
	name string        // -redis-pool
	wait time.Duration // -redis-wait: for the other processes on the pool
}

// redisExtension adds the redispool pool to the harness; log receives the
// notes of a run that waits for other processes.
func redisExtension(log io.Writer) loadtest.Extension {
	f := &redisFlags{}
	return loadtest.Extension{
		Name:    "redis",
		Command: "crsload-redis",
		Title:   func() string { return fmt.Sprintf("redispool pool %q on Redis %s", f.name, f.addr) },
		Usage: `With -redis ADDR, the pool is a redispool pool kept in that Redis (or
Valkey), and several crsload processes given the same -redis and
-redis-pool share it: start them together. A request is Acquire, the call,
then Lease.Release, or Lease.Cooldown with -cooldown (-suspend: Suspend
first). The default is then at most 200 workers: each request is at least
two Redis round trips. Every acquisition is a lease; -strategy, -heaps,
-ordering, -events, -event-queue and -api acquire, the in-process
scheduler's, are refused. After a failed call the lease ends with
Lease.Fail, which feeds the pool's Ejection (-eject, with -eject-base,
-eject-max and -eject-share; the failure scenario's 5 in a row apply).
redispool has no events, no count of cancelled waits and no health
totals (the accounting skips those checks). When that Redis cannot be
reached, the command says so in one line and exits 3: nothing ran. With -scenario llm, the keys are the
pool's resources, with -rpm and -tpm as their limits, and -provider URL
with -keys is required: start one provider for all the processes
(go run ./cmd/mockprovider) and give them -provider-stats to read its
counters, every process's calls, at the end. See the package documentation
(go doc ./cmd/crsload-redis) for how processes share a pool.
`,
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.addr, "redis", "", "run on a redispool pool in the Redis at `host:port` (default workers: at most 200)")
			fs.StringVar(&f.name, "redis-pool", defaultPoolName, "with -redis: the redispool pool's `name`; the crsload processes on one pool share it")
			fs.DurationVar(&f.wait, "redis-wait", defaultWait, "with -redis: how long to wait, after this run, for the other processes on the\npool to finish theirs, so that the pool's figures are final")
		},
		Configure: f.configure,
		Open: func(ctx context.Context, cfg loadtest.Config) (loadtest.Pool, error) {
			return openPool(ctx, cfg, *f, log)
		},
		LLM: func(ctx context.Context, cfg loadtest.Config, keys []string) (loadtest.LLMClient, error) {
			return openLLMClient(ctx, cfg, keys, *f, log)
		},
		LLMTitle: "its keys leased WithCost, settled to the usage",
		Tenants: func(ctx context.Context, cfg loadtest.Config, fair bool) (loadtest.TenantsPool, error) {
			return openTenantsPool(ctx, cfg, *f, log, fair)
		},
		// Redis keeps suspensions in whole milliseconds (server clock).
		CooldownSlack: time.Millisecond,
	}
}

// configure selects the Redis pool when -redis is given, and refuses what
// it cannot run.
func (f *redisFlags) configure(c *loadtest.Config, given func(string) bool) (bool, error) {
	if f.addr == "" {
		for _, name := range []string{"redis-pool", "redis-wait"} {
			if given(name) {
				return false, fmt.Errorf("-%s: needs -redis", name)
			}
		}
		return false, nil
	}
	for _, name := range []string{"strategy", "heaps", "ordering", "events", "event-queue"} {
		if given(name) {
			return true, fmt.Errorf("%s: the in-process scheduler's; a redispool pool has no shards, strategy, ordering or events", name)
		}
	}
	switch {
	case given("pool"):
		return true, errors.New("pool: -redis selects the pool (-compare adds the mutex baseline)")
	case given("api") && c.API != "lease":
		return true, errors.New("api: every acquisition from a redispool pool is a lease: drop -api acquire")
	case c.Scenario == loadtest.LLM && c.LLM.Provider == "":
		return true, errors.New("provider: -scenario llm -redis needs -provider URL (and -keys): the processes on the pool share one provider, as they share its keys; cmd/mockprovider is one")
	case c.Policy == config.Exclusive && c.Capacity > redispool.MaxCapacity:
		return true, fmt.Errorf("capacity: want at most %d with -redis", redispool.MaxCapacity)
	case f.name == "" || strings.ContainsAny(f.name, "{}"):
		return true, fmt.Errorf("redis-pool %q: want a name without '{' or '}'", f.name)
	case f.wait <= 0:
		return true, errors.New("redis-wait: want > 0")
	}
	if c.Scenario != loadtest.LLM {
		// Every acquisition is a lease, ended with Lease.Fail after a
		// failed call: the failure scenario's ejection applies, which
		// the harness drops for the scheduler without -api lease.
		c.API = "lease"
		if !given("eject") {
			c.Eject, _ = strconv.Atoi(loadtest.ScenarioDefaults(c.Scenario)["eject"])
		}
	}
	if !given("workers") {
		c.Workers = min(c.Workers, defaultWorkers) // the cooldown scenario's few stay few
	}
	return true, nil
}
