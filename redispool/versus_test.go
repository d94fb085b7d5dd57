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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	versusFor  = flag.Duration("versus-for", 3*time.Second, "how long BenchmarkVersusLock runs each system on each workload")
	versusMany = flag.Int("versus-many", 10000, "resources of BenchmarkVersusLock's large workload")
)

// roleVersus is the child process of a workload of several processes
// (runChild hands it to runVersusChild).
const roleVersus = "versus"

// envVersus carries a child's versusChildSpec, as JSON.
const envVersus = "REDISPOOL_VERSUS"

type versusConfig struct {
	run    time.Duration // each system on each workload, per round
	warmup time.Duration // before each run, not measured: connections, scripts
	many   int           // resources of the large workload
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
	systemPool = "redispool"
	systemLock = "plain lock"
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

// span is a hold: from Acquire's return to Release's call (wall clock,
// ns, which every process of the machine reads alike).
type span struct {
	Resource   int
	Start, End int64
}

// phase is what the goroutines of one process did in one run.
type phase struct {
	Acquired, Released int64
	InWindow           int64   // acquisitions that returned before the end
	Cmds, Failed       int64   // the hook's counts
	ElapsedNs          int64   // from the start to the return of the last goroutine
	BusyNs             int64   // the holds, clipped to the run's window
	WaitsNs            []int64 // each Acquire's duration
	Holds              []span  // kept for the check across processes
	Errors             []string
}

func (p *phase) add(q phase) {
	p.Acquired += q.Acquired
	p.Released += q.Released
	p.InWindow += q.InWindow
	p.Cmds += q.Cmds
	p.Failed += q.Failed
	p.ElapsedNs = max(p.ElapsedNs, q.ElapsedNs)
	p.BusyNs += q.BusyNs
	p.WaitsNs = append(p.WaitsNs, q.WaitsNs...)
	p.Holds = append(p.Holds, q.Holds...)
	p.Errors = append(p.Errors, q.Errors...)
}

// runPhase runs goroutines that, from start until end, acquire from sys,
// hold for hold and release; a goroutine whose Acquire returns after
// end still holds and releases what it got. Each holder checks a
// per-resource counter: a resource held twice at once in this process
// is an error of the phase.
func runPhase(sys contender, hook *versusHook, goroutines, resources int, hold time.Duration, start, end time.Time, keepHolds bool) phase {
	ctx := context.Background()
	inUse := make([]atomic.Int32, resources)
	cmds, failed := hook.cmds.Load(), hook.failed.Load()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out phase
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine phase
			defer func() {
				mu.Lock()
				out.add(mine)
				mu.Unlock()
			}()
			time.Sleep(time.Until(start))
			for time.Now().Before(end) {
				t0 := time.Now()
				g, err := sys.acquire(ctx)
				t1 := time.Now()
				if err != nil {
					mine.Errors = append(mine.Errors, fmt.Sprintf("acquire: %v", err))
					return
				}
				mine.Acquired++
				if t1.Before(end) {
					mine.InWindow++
				}
				mine.WaitsNs = append(mine.WaitsNs, int64(t1.Sub(t0)))
				if g.resource < 0 || g.resource >= resources {
					mine.Errors = append(mine.Errors, fmt.Sprintf("acquired resource %d of %d", g.resource, resources))
					return
				}
				if n := inUse[g.resource].Add(1); n != 1 {
					mine.Errors = append(mine.Errors, fmt.Sprintf("resource %d held by %d goroutines at once", g.resource, n))
				}
				if hold > 0 {
					time.Sleep(hold)
				}
				t2 := time.Now()
				inUse[g.resource].Add(-1)
				mine.BusyNs += overlap(t1, t2, start, end)
				if keepHolds {
					mine.Holds = append(mine.Holds, span{g.resource, t1.UnixNano(), t2.UnixNano()})
				}
				if err := sys.release(ctx, g); err != nil {
					mine.Errors = append(mine.Errors, fmt.Sprintf("release %d: %v", g.resource, err))
					return
				}
				mine.Released++
			}
		}()
	}
	wg.Wait()
	out.ElapsedNs = int64(time.Since(start))
	out.Cmds = hook.cmds.Load() - cmds
	out.Failed = hook.failed.Load() - failed
	return out
}

// overlap is how long [a, b] and [from, to] have in common, in ns.
func overlap(a, b, from, to time.Time) int64 {
	if a.Before(from) {
		a = from
	}
	if b.After(to) {
		b = to
	}
	return max(int64(b.Sub(a)), 0)
}

// overlaps lists (the first few) holds of one resource that overlap.
func overlaps(holds []span) []string {
	hs := append([]span(nil), holds...)
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Resource != hs[j].Resource {
			return hs[i].Resource < hs[j].Resource
		}
		return hs[i].Start < hs[j].Start
	})
	var bad []string
	for i := 1; i < len(hs) && len(bad) < 10; i++ {
		if prev, cur := hs[i-1], hs[i]; cur.Resource == prev.Resource && cur.Start < prev.End {
			bad = append(bad, fmt.Sprintf("resource %d held twice: [%d, %d] and [%d, %d]", cur.Resource, prev.Start, prev.End, cur.Start, cur.End))
		}
	}
	return bad
}

func TestOverlapsFindsAResourceHeldTwice(t *testing.T) {
	good := []span{{0, 0, 10}, {1, 5, 20}, {0, 10, 15}, {1, 20, 30}}
	if bad := overlaps(good); len(bad) != 0 {
		t.Fatalf("holds one after another are reported: %v", bad)
	}
	if bad := overlaps([]span{{0, 10, 15}, {1, 0, 20}, {0, 0, 11}}); len(bad) != 1 {
		t.Fatalf("one overlap: reported %v", bad)
	}
}

// measure is one system's figures on one workload, summed over rounds.
type measure struct {
	phase
	resources int
	windowNs  int64 // the runs' windows, start to end
	cpu       time.Duration
}

// merge adds a run (or the runs of another measure) to m.
func (m *measure) merge(q measure) {
	elapsed := m.ElapsedNs
	m.add(q.phase)
	m.ElapsedNs = elapsed + q.ElapsedNs // runs add up; add keeps the longest process
	m.Holds = nil                       // checked by run
	m.windowNs += q.windowNs
	m.cpu += q.cpu
	m.resources = q.resources
	sort.Slice(m.WaitsNs, func(i, j int) bool { return m.WaitsNs[i] < m.WaitsNs[j] })
}

func (m measure) seconds() float64 { return time.Duration(m.ElapsedNs).Seconds() }

// rate: acquisitions per second of the window (those after it, by
// goroutines that were waiting when it ended, are not counted).
func (m measure) rate() float64 {
	return float64(m.InWindow) / time.Duration(m.windowNs).Seconds()
}

// cpuPerOp: server CPU per acquire+release.
func (m measure) cpuPerOp() time.Duration { return m.cpu / time.Duration(max(m.Released, 1)) }

func (m measure) cpuShare() float64 { return m.cpu.Seconds() / m.seconds() }

// busy: the share of the resources' time that holders held them.
func (m measure) busy() float64 {
	return float64(m.BusyNs) / (float64(m.resources) * float64(m.windowNs))
}

func (m measure) perAcquisition(n int64) float64 { return float64(n) / float64(max(m.Acquired, 1)) }

// wait is the quantile q of the waits in ms (q < 0: the mean).
func (m measure) wait(q float64) float64 {
	if len(m.WaitsNs) == 0 {
		return 0
	}
	if q < 0 {
		var sum float64
		for _, w := range m.WaitsNs {
			sum += float64(w)
		}
		return sum / float64(len(m.WaitsNs)) / 1e6
	}
	return float64(m.WaitsNs[int(q*float64(len(m.WaitsNs)-1))]) / 1e6
}

// versusRow is one workload's result: both systems, and for the
// single-goroutine workload a PING loop for scale.
type versusRow struct {
	w                  workload
	pool, lock         measure
	pings, pingSeconds float64
}

func (r *versusRow) merge(q versusRow) {
	r.w = q.w
	r.pool.merge(q.pool)
	r.lock.merge(q.lock)
	r.pings += q.pings
	r.pingSeconds += q.pingSeconds
}

func (r versusRow) ping() float64 {
	if r.pingSeconds == 0 {
		return 0
	}
	return r.pings / r.pingSeconds
}

// versusHarness runs workloads against the server at addr.
type versusHarness struct {
	cfg   versusConfig
	addr  string
	admin *redis.Client // setup, checks and INFO: counted by no hook
	turns int           // rounds run so far: which system goes first
}

func newVersusHarness(tb testing.TB, cfg versusConfig) *versusHarness {
	needRedis(tb)
	return &versusHarness{cfg: cfg, addr: testAddr, admin: clientOf(tb, testAddr)}
}

// workload runs w for rounds rounds, the two systems taking turns (the
// first of a round alternates, also from one call to the next), on
// state set up once.
func (h *versusHarness) workload(tb testing.TB, w workload, rounds int) (versusRow, error) {
	ctx := context.Background()
	pool := newPool(tb, h.admin, Options{})
	if err := addResources(ctx, pool, w.resources); err != nil {
		return versusRow{}, err
	}
	specs := []systemSpec{
		{System: systemPool, Name: pool.name, Resources: w.resources},
		{System: systemLock, Name: poolName(tb) + ":lock", Resources: w.resources},
	}
	row := versusRow{w: w}
	for range rounds {
		h.turns++
		for i := range specs {
			spec := specs[(i+h.turns)%len(specs)]
			m, err := h.run(ctx, w, spec)
			if err != nil {
				return row, fmt.Errorf("%s, %s: %w", w.label(), spec.System, err)
			}
			if spec.System == systemLock {
				row.lock.merge(m)
			} else {
				row.pool.merge(m)
			}
		}
		if w.goroutines == 1 && w.processes == 1 {
			n, err := h.pingLoop(ctx)
			if err != nil {
				return row, err
			}
			row.pings += n
			row.pingSeconds += h.cfg.run.Seconds()
		}
	}
	return row, nil
}

func addResources(ctx context.Context, p *Pool, n int) error {
	const workers = 16
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n && errs[w] == nil; i += workers {
				errs[w] = p.Add(ctx, Resource{ID: "r" + strconv.Itoa(i)})
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pingLoop counts the PINGs of one goroutine in cfg.run.
func (h *versusHarness) pingLoop(ctx context.Context) (float64, error) {
	c, _ := versusClient(h.addr, 1)
	defer c.Close()
	n := 0
	for end := time.Now().Add(h.cfg.run); time.Now().Before(end); n++ {
		if err := c.Ping(ctx).Err(); err != nil {
			return 0, err
		}
	}
	return float64(n), nil
}

// run measures one system on w once, in this process or in
// w.processes children, and checks the outcome: no error, no resource
// held twice, every acquisition released and nothing held after.
func (h *versusHarness) run(ctx context.Context, w workload, spec systemSpec) (measure, error) {
	var (
		m   measure
		err error
	)
	if w.processes == 1 {
		m, err = h.runHere(ctx, w, spec)
	} else {
		m, err = h.runChildren(ctx, w, spec)
	}
	if err != nil {
		return m, err
	}
	if len(m.Errors) > 0 {
		return m, fmt.Errorf("%d errors, the first: %s", len(m.Errors), m.Errors[0])
	}
	if bad := overlaps(m.Holds); len(bad) > 0 {
		return m, errors.New(strings.Join(bad, "; "))
	}
	if m.Acquired != m.Released {
		return m, fmt.Errorf("%d acquisitions, %d releases", m.Acquired, m.Released)
	}
	sys, closeSys, err := spec.open(ctx, h.admin)
	if err != nil {
		return m, err
	}
	defer closeSys()
	if n, err := sys.held(ctx); err != nil || n != 0 {
		return m, fmt.Errorf("after the run %d held (%v)", n, err)
	}
	return m, nil
}

func (h *versusHarness) runHere(ctx context.Context, w workload, spec systemSpec) (measure, error) {
	c, hook := versusClient(h.addr, w.goroutines)
	defer c.Close()
	sys, closeSys, err := spec.open(ctx, c)
	if err != nil {
		return measure{}, err
	}
	defer closeSys()
	now := time.Now()
	if warm := runPhase(sys, hook, w.goroutines, w.resources, w.hold, now, now.Add(h.cfg.warmup), false); len(warm.Errors) > 0 {
		return measure{}, fmt.Errorf("warm-up: %s", warm.Errors[0])
	}
	cpu0, err := serverCPU(ctx, h.admin)
	if err != nil {
		return measure{}, err
	}
	start := time.Now().Add(5 * time.Millisecond)
	end := start.Add(h.cfg.run)
	ph := runPhase(sys, hook, w.goroutines, w.resources, w.hold, start, end, false)
	cpu1, err := serverCPU(ctx, h.admin)
	return measure{phase: ph, resources: w.resources, windowNs: int64(h.cfg.run), cpu: cpu1 - cpu0}, err
}

// versusChildSpec is what a child process runs.
type versusChildSpec struct {
	Addr       string
	System     systemSpec
	Goroutines int
	Hold       time.Duration
	Warmup     time.Duration
}

// runChildren runs w in w.processes children, which warm up, say
// "ready", start together at the wall-clock time the parent sends
// ("go START END", ns) and reply with their phase as JSON.
func (h *versusHarness) runChildren(ctx context.Context, w workload, spec systemSpec) (measure, error) {
	env, err := json.Marshal(versusChildSpec{Addr: h.addr, System: spec, Goroutines: w.goroutines, Hold: w.hold, Warmup: h.cfg.warmup})
	if err != nil {
		return measure{}, err
	}
	var children []*versusChild
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	for range w.processes {
		c, err := startVersusChild(string(env))
		if err != nil {
			return measure{}, err
		}
		children = append(children, c)
	}
	for i, c := range children {
		if line, err := c.line(time.Minute); err != nil || line != "ready" {
			return measure{}, fmt.Errorf("child %d: %q, %v", i, line, err)
		}
	}
	cpu0, err := serverCPU(ctx, h.admin)
	if err != nil {
		return measure{}, err
	}
	start := time.Now().Add(50 * time.Millisecond)
	end := start.Add(h.cfg.run)
	for i, c := range children {
		if _, err := fmt.Fprintf(c.in, "go %d %d\n", start.UnixNano(), end.UnixNano()); err != nil {
			return measure{}, fmt.Errorf("child %d: %w", i, err)
		}
	}
	m := measure{resources: w.resources, windowNs: int64(h.cfg.run)}
	for i, c := range children {
		line, err := c.line(h.cfg.run + time.Minute)
		if err != nil {
			return measure{}, fmt.Errorf("child %d: %w", i, err)
		}
		var ph phase
		if err := json.Unmarshal([]byte(line), &ph); err != nil {
			return measure{}, fmt.Errorf("child %d: %w", i, err)
		}
		m.add(ph)
	}
	cpu1, err := serverCPU(ctx, h.admin)
	m.cpu = cpu1 - cpu0
	return m, err
}

// versusChild is a child process (the test binary, as roleVersus).
type versusChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startVersusChild(env string) (*versusChild, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+roleVersus, envVersus+"="+env)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &versusChild{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// line reads a line, killing the child if none comes within limit.
func (c *versusChild) line(limit time.Duration) (string, error) {
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := c.out.ReadString('\n')
		got <- result{strings.TrimSpace(line), err}
	}()
	select {
	case r := <-got:
		return r.line, r.err
	case <-time.After(limit):
		_ = c.cmd.Process.Kill()
		<-got
		return "", fmt.Errorf("child said nothing for %v", limit)
	}
}

// stop closes the child's stdin (it exits when its run is over) and
// kills it if it lingers. Wait closes the stdout pipe, so it comes
// only after the last read.
func (c *versusChild) stop() {
	_ = c.in.Close()
	exited := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-exited
	}
}

// runVersusChild is the child's side of runChildren.
func runVersusChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "versus child:", err)
		return 1
	}
	var spec versusChildSpec
	if err := json.Unmarshal([]byte(os.Getenv(envVersus)), &spec); err != nil {
		return fail(err)
	}
	ctx := context.Background()
	c, hook := versusClient(spec.Addr, spec.Goroutines)
	defer c.Close()
	sys, closeSys, err := spec.System.open(ctx, c)
	if err != nil {
		return fail(err)
	}
	defer closeSys()
	now := time.Now()
	if warm := runPhase(sys, hook, spec.Goroutines, spec.System.Resources, spec.Hold, now, now.Add(spec.Warmup), false); len(warm.Errors) > 0 {
		return fail(errors.New(warm.Errors[0]))
	}
	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return fail(err)
	}
	var start, end int64
	if _, err := fmt.Sscanf(line, "go %d %d", &start, &end); err != nil {
		return fail(fmt.Errorf("%q: %w", line, err))
	}
	ph := runPhase(sys, hook, spec.Goroutines, spec.System.Resources, spec.Hold, time.Unix(0, start), time.Unix(0, end), true)
	if err := json.NewEncoder(os.Stdout).Encode(ph); err != nil {
		return fail(err)
	}
	return 0
}

// serverCPU is the server's CPU time so far (INFO cpu: system + user,
// all its threads).
func serverCPU(ctx context.Context, c *redis.Client) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	found := 0
	for _, line := range strings.Split(info, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu: %s: %w", line, err)
			}
			total += v
			found++
		}
	}
	if found != 2 {
		return 0, fmt.Errorf("INFO cpu without used_cpu_sys and used_cpu_user: %q", info)
	}
	return time.Duration(total * float64(time.Second)), nil
}

// versusTable is the markdown table of issue 30 for rows.
func versusTable(rows []versusRow) string {
	var b strings.Builder
	b.WriteString("| workload | redispool | plain lock | ratio |\n| --- | --- | --- | --- |\n")
	line := func(what, pool, lock, ratio string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", what, pool, lock, ratio)
	}
	ratio := func(a, b float64) string { return fmt.Sprintf("%.2fx", a/b) }
	for _, r := range rows {
		p, l := r.pool, r.lock
		if r.w.hold == 0 {
			lockRate := thousands(l.rate())
			if r.ping() > 0 {
				lockRate += fmt.Sprintf(" (PING loop: %s)", thousands(r.ping()))
			}
			line(r.w.label()+": acquire+release per second", thousands(p.rate()), lockRate, ratio(p.rate(), l.rate()))
			line("same: server CPU per acquire+release (server busy)",
				fmt.Sprintf("%s (%.0f %%)", micros(p.cpuPerOp()), 100*p.cpuShare()),
				fmt.Sprintf("%s (%.0f %%)", micros(l.cpuPerOp()), 100*l.cpuShare()),
				ratio(float64(p.cpuPerOp()), float64(l.cpuPerOp())))
			continue
		}
		line(r.w.label()+": busy share", fmt.Sprintf("%.2f", p.busy()), fmt.Sprintf("%.2f", l.busy()), ratio(p.busy(), l.busy()))
		waits := func(m measure) string {
			return fmt.Sprintf("%.2f / %.2f / %.2f / %.2f ms (p99 %.1fx mean)", m.wait(0.5), m.wait(0.9), m.wait(0.99), m.wait(-1), m.wait(0.99)/m.wait(-1))
		}
		line("same: wait p50 / p90 / p99 / mean", waits(p), waits(l), "")
		tries := func(m measure) string {
			return fmt.Sprintf("%.2f / %.2f", m.perAcquisition(m.Failed), m.perAcquisition(m.Cmds))
		}
		line("same: failed tries / client commands per acquire+release", tries(p), tries(l), "")
	}
	return b.String()
}

// thousands formats n rounded, with commas: 14,219.
func thousands(n float64) string {
	s := strconv.FormatInt(int64(n+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'g', 3, 64) + " µs"
}

// reportVersus reports r's figures and ratios as benchmark metrics.
func reportVersus(b *testing.B, r versusRow) {
	b.ReportMetric(0, "ns/op")
	for _, s := range []struct {
		prefix string
		m      measure
	}{{"pool-", r.pool}, {"lock-", r.lock}} {
		m := s.m
		if r.w.hold == 0 {
			b.ReportMetric(m.rate(), s.prefix+"ops/s")
			b.ReportMetric(float64(m.cpuPerOp())/float64(time.Microsecond), s.prefix+"server-µs/op")
			continue
		}
		b.ReportMetric(m.busy(), s.prefix+"busy")
		b.ReportMetric(m.wait(0.5), s.prefix+"wait-p50-ms")
		b.ReportMetric(m.wait(0.99), s.prefix+"wait-p99-ms")
		b.ReportMetric(m.wait(-1), s.prefix+"wait-mean-ms")
		b.ReportMetric(m.perAcquisition(m.Failed), s.prefix+"failed/op")
		b.ReportMetric(m.perAcquisition(m.Cmds), s.prefix+"cmds/op")
	}
	if r.w.hold == 0 {
		b.ReportMetric(r.pool.rate()/r.lock.rate(), "rate-ratio")
		b.ReportMetric(float64(r.pool.cpuPerOp())/float64(r.lock.cpuPerOp()), "cpu-ratio")
	} else {
		b.ReportMetric(r.pool.busy()/r.lock.busy(), "busy-ratio")
	}
	if r.ping() > 0 {
		b.ReportMetric(r.ping(), "ping/s")
	}
}

// BenchmarkVersusLock runs each workload of issue 30 (a sub-benchmark
// each, b.N rounds) on both systems and prints the table of all of
// them, each row summed over the -count runs of its sub-benchmark.
func BenchmarkVersusLock(b *testing.B) {
	h := newVersusHarness(b, versusConfig{run: *versusFor, warmup: min(*versusFor/5, 500*time.Millisecond), many: *versusMany})
	results := map[string]versusRow{}
	var names []string
	for _, w := range h.cfg.workloads() {
		ok := b.Run(w.name, func(b *testing.B) {
			r, err := h.workload(b, w, b.N)
			if err != nil {
				b.Fatal(err)
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
	if len(rows) > 0 {
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
		for _, m := range []measure{r.pool, r.lock} {
			if m.Acquired == 0 {
				t.Errorf("%s: nothing acquired", w.label())
			}
		}
		rows = append(rows, r)
	}
	t.Logf("figures of a tiny run (not a measurement):\n%s", versusTable(rows))
}
