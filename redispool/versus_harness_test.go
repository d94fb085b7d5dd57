package redispool

// BenchmarkVersusLock's harness: the workloads run on each system in
// turn, in this process or in child processes that start together.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// versusRow is one workload's result: each system (the floor only on
// the workloads without holds), and for the single-goroutine workload a
// PING loop for scale.
type versusRow struct {
	w                  workload
	pool, lock, floor  measure
	pings, pingSeconds float64
}

func (r *versusRow) merge(q versusRow) {
	r.w = q.w
	r.pool.merge(q.pool)
	r.lock.merge(q.lock)
	r.floor.merge(q.floor)
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

// workload runs w for rounds rounds, the systems taking turns (the
// first of a round rotates, also from one call to the next), on state
// set up once.
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
	if w.hold == 0 {
		specs = append(specs, systemSpec{System: systemFloor, Name: poolName(tb) + ":floor", Resources: w.resources})
	}
	if h.cfg.only != "" {
		specs = slices.DeleteFunc(specs, func(s systemSpec) bool { return s.System != h.cfg.only })
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
			row.of(spec.System).merge(m)
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

// of is the measure of system in r.
func (r *versusRow) of(system string) *measure {
	switch system {
	case systemPool:
		return &r.pool
	case systemLock:
		return &r.lock
	}
	return &r.floor
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
