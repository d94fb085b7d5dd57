package redispool

// BenchmarkVersusLock, issue 30's yardstick: the pool against the plain
// Redis lock (plainlock_test.go) on the same server in the same run,
// workload by workload, the two systems taking turns, with the ratios.
//
//	cd redispool && go test -run '^$' -bench VersusLock -count 8 .
//
// prints the benchmark lines of each run (benchstat reads their
// metrics) and, at the end, the markdown table of docs/BENCHMARKS.md,
// each row summed over the -count runs. -args -versus-for=3s
// -versus-many=10000 sets how long each system runs on each workload in
// each round (b.N rounds, 1 unless -benchtime asks for more) and the
// resources of the large workload. It uses the server that TestMain
// starts, or CRS_REDIS_ADDR (whose other clients then count in the
// server's CPU).
//
// Both systems are driven the same way: a context without deadline
// (so that the pool's calls run on the caller's goroutine), a client
// per system and process with a connection per goroutine, a warm-up
// before each measured run, and a go-redis hook that counts the
// commands and the tries that got nothing.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	versusFor  = flag.Duration("versus-for", 3*time.Second, "how long BenchmarkVersusLock runs each system on each workload")
	versusMany = flag.Int("versus-many", 10000, "resources of BenchmarkVersusLock's large workload")
	versusOnly = flag.String("versus-only", "", "run only this system of BenchmarkVersusLock (redispool, lock or floor), to profile the server under it")
)

// versusSystems are the systems by the names -versus-only takes.
var versusSystems = map[string]string{"redispool": systemPool, "lock": systemLock, "floor": systemFloor}

// roleVersus is the child process of a workload of several processes
// (runChild hands it to runVersusChild).
const roleVersus = "versus"

// envVersus carries a child's versusChildSpec, as JSON.
const envVersus = "REDISPOOL_VERSUS"

type versusConfig struct {
	run    time.Duration // each system on each workload, per round
	warmup time.Duration // before each run, not measured: connections, scripts
	many   int           // resources of the large workload
	only   string        // the one system to run ("": all of them)
}

// workload is one line of issue 30's table.
type workload struct {
	name       string // of the sub-benchmark
	processes  int
	goroutines int // in each process
	resources  int
	hold       time.Duration // 0: release at once
}

func (c versusConfig) workloads() []workload {
	return []workload{
		{name: "1x1", processes: 1, goroutines: 1, resources: 1},
		{name: "64x64", processes: 1, goroutines: 64, resources: 64},
		{name: fmt.Sprintf("64x%d", c.many), processes: 1, goroutines: 64, resources: c.many},
		{name: "64x4-hold1ms", processes: 1, goroutines: 64, resources: 4, hold: time.Millisecond},
		{name: "2x32x4-hold1ms", processes: 2, goroutines: 32, resources: 4, hold: time.Millisecond},
	}
}

func (w workload) label() string {
	var b strings.Builder
	if w.processes > 1 {
		fmt.Fprintf(&b, "%d processes x %d goroutines", w.processes, w.goroutines)
	} else {
		b.WriteString(plural(w.goroutines, "goroutine"))
	}
	b.WriteString(", " + plural(w.resources, "resource"))
	if w.hold > 0 {
		fmt.Fprintf(&b, " held %g ms", float64(w.hold)/float64(time.Millisecond))
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return thousands(float64(n)) + " " + what + "s"
}

// The systems compared.
const (
	systemPool  = "redispool"
	systemLock  = "plain lock"
	systemFloor = "floor" // floor_test.go
)

// contender is what a workload drives: the pool or the plain lock.
type contender interface {
	acquire(ctx context.Context) (grant, error)
	release(ctx context.Context, g grant) error
	// held counts the resources held now, for the check after a run.
	held(ctx context.Context) (int, error)
}

// grant is one acquisition: resource i is "ri" in the pool, key i of
// the plain lock.
type grant struct {
	resource int
	lease    *Lease // the pool's
	token    string // the plain lock's
}

type poolContender struct{ p *Pool }

func (c poolContender) acquire(ctx context.Context) (grant, error) {
	l, err := c.p.Acquire(ctx)
	if err != nil {
		return grant{}, err
	}
	r, err := strconv.Atoi(strings.TrimPrefix(l.ID, "r"))
	if err != nil {
		return grant{}, errors.Join(fmt.Errorf("lease of unknown resource %q", l.ID), l.Release(ctx))
	}
	return grant{resource: r, lease: l}, nil
}

func (c poolContender) release(ctx context.Context, g grant) error { return g.lease.Release(ctx) }

func (c poolContender) held(ctx context.Context) (int, error) {
	s, err := c.p.Stats(ctx)
	return s.Leases, err
}

type lockContender struct{ l *plainLock }

func (c lockContender) acquire(ctx context.Context) (grant, error) {
	r, token, err := c.l.acquire(ctx)
	return grant{resource: r, token: token}, err
}

func (c lockContender) release(ctx context.Context, g grant) error {
	return c.l.release(ctx, g.resource, g.token)
}

func (c lockContender) held(ctx context.Context) (int, error) { return c.l.held(ctx) }

// systemSpec names a system's state on the server, for any process to
// open a handle on.
type systemSpec struct {
	System    string
	Name      string // the pool's name, or the plain lock's key prefix
	Resources int
}

func (s systemSpec) open(ctx context.Context, c *redis.Client) (contender, func(), error) {
	switch s.System {
	case systemPool:
		p, err := New(c, Options{Name: s.Name})
		if err != nil {
			return nil, nil, err
		}
		return poolContender{p}, func() { _ = p.Close() }, nil
	case systemLock:
		l, err := newPlainLock(ctx, c, s.Name, s.Resources, DefaultLeaseTTL)
		if err != nil {
			return nil, nil, err
		}
		return lockContender{l}, func() {}, nil
	case systemFloor:
		f, err := openFloor(ctx, c, s.Name, s.Resources)
		return f, func() {}, err
	}
	return nil, nil, fmt.Errorf("unknown system %q", s.System)
}

// versusHook counts a client's commands, and its tries that got
// nothing: an acquire script that found no free slot, a SET NX that
// found the key taken.
type versusHook struct {
	cmds, failed atomic.Int64
}

func (h *versusHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *versusHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.cmds.Add(1)
		if failedTry(cmd, err) {
			h.failed.Add(1)
		}
		return err
	}
}

func (h *versusHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// failedTry tells from a command and its error (which the client sets
// on cmd only after the hooks have returned) whether it was a try that
// got nothing.
func failedTry(cmd redis.Cmder, err error) bool {
	switch cmd.Name() {
	case "set":
		return errors.Is(err, redis.Nil)
	case "evalsha":
		args := cmd.Args()
		if len(args) < 2 || args[1] != any(scriptAcquire.Hash()) {
			return false
		}
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			return false
		}
		reply, _ := c.Val().([]any)
		return len(reply) > 0 && reply[0] == any(int64(statusNone))
	}
	return false
}

// versusClient is a client with a connection for each of goroutines
// (and a few to spare), counted by its hook.
func versusClient(addr string, goroutines int) (*redis.Client, *versusHook) {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: goroutines + 4})
	h := &versusHook{}
	c.AddHook(h)
	return c, h
}

// BenchmarkVersusLock runs each workload of issue 30 (a sub-benchmark
// each, b.N rounds) on both systems and prints the table of all of
// them, each row summed over the -count runs of its sub-benchmark.
func BenchmarkVersusLock(b *testing.B) {
	only, ok := versusSystems[*versusOnly]
	if !ok && *versusOnly != "" {
		b.Fatalf("-versus-only %q: want redispool, lock or floor", *versusOnly)
	}
	h := newVersusHarness(b, versusConfig{run: *versusFor, warmup: min(*versusFor/5, 500*time.Millisecond), many: *versusMany, only: only})
	results := map[string]versusRow{}
	var names []string
	for _, w := range h.cfg.workloads() {
		ok := b.Run(w.name, func(b *testing.B) {
			if only == systemFloor && w.hold > 0 {
				b.Skip("the floor runs only the workloads without holds")
			}
			r, err := h.workload(b, w, b.N)
			if err != nil {
				b.Fatal(err)
			}
			if only != "" {
				m := r.of(only)
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(m.rate(), "ops/s")
				b.ReportMetric(float64(m.cpuPerOp())/float64(time.Microsecond), "server-µs/op")
				return
			}
			reportVersus(b, r)
			sum, seen := results[w.name]
			if !seen {
				names = append(names, w.name)
			}
			sum.merge(r)
			results[w.name] = sum
		})
		if !ok {
			return
		}
	}
	var rows []versusRow
	for _, n := range names {
		rows = append(rows, results[n])
	}
	if len(rows) > 0 && only == "" {
		fmt.Printf("\n%s\n", versusTable(rows))
	}
}

// The harness at a fraction of a second per workload, so that it keeps
// working; it asserts no speed, only that each system held no resource
// twice (within a process: per-resource counters; across processes:
// the holds' intervals), released every acquisition and left nothing
// held.
func TestVersusLockHarnessHoldsEachResourceOnceAndReleasesAll(t *testing.T) {
	h := newVersusHarness(t, versusConfig{run: 150 * time.Millisecond, warmup: 20 * time.Millisecond, many: 300})
	var rows []versusRow
	for _, w := range h.cfg.workloads() {
		r, err := h.workload(t, w, 1)
		if err != nil {
			t.Fatal(err)
		}
		systems := []measure{r.pool, r.lock}
		if w.hold == 0 {
			systems = append(systems, r.floor)
		}
		for _, m := range systems {
			if m.Acquired == 0 {
				t.Errorf("%s: nothing acquired", w.label())
			}
		}
		rows = append(rows, r)
	}
	t.Logf("figures of a tiny run (not a measurement):\n%s", versusTable(rows))
}
