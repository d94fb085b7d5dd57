package linearizability

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/crsched/crs/verify/model"
)

var (
	histories = flag.Int("histories", 220, "number of concurrent histories to record and check")
	visDir    = flag.String("lin.vis", "", "directory for the HTML visualisation of a failed history (default: the test's temp dir, kept on failure)")
	timeout   = flag.Duration("lin.timeout", 30*time.Second, "porcupine's time limit per history; running out is a failure")
	seedFlag  = flag.Uint64("lin.seed", 0, "seed of the first history (0: from the clock); history i uses seed+i")
	only      = flag.Int("lin.shape", -1, "record only histories of this shape (an index into shapes)")
	replay    = flag.String("lin.replay", "", "check the history saved in this .json file (written beside a failure's visualisation) instead of recording new ones")
)

// shape is one kind of history: a scheduler configuration and how many
// goroutines issue how many calls.
type shape struct {
	cfg     model.Config
	clients int
	opsEach int
	mix     model.Mix
	// inFlight bounds how many calls are in progress at once (0: no
	// bound). Porcupine's search is exponential in the number of calls
	// that overlap, not in the number of goroutines; with 32 goroutines
	// on two cores, most of them sit preempted or parked on a lock with a
	// call open, and a single history of 64 calls can take minutes to
	// check. The bound keeps every goroutine a distinct client, in any
	// interleaving, while at most inFlight calls overlap.
	inFlight int
}

// shapes cycles through the configurations that matter: one shard with
// exact priority, several shards where Acquire may return any active
// resource, GlobalOrder's exact priority over several shards, both
// policies, and capacities above one. Goroutines range over 8 to 32; the
// busier the history, the fewer calls each goroutine makes, so that
// porcupine's search (exponential in concurrency) ends.
//
// Every history uses every operation. In pinned ones one resource is
// always available (see model.Config.Pinned), so that Acquire never
// fails and histories run long; in the others the pool runs dry, Acquire
// fails often, and AcquireContext and Lease, whose context has already
// ended (see model.Config), queue as waiters for a moment and are at
// times served as they give up.
func shapes() []shape {
	full := model.DefaultMix()
	return []shape{
		{model.Config{HeapCount: 1, Exclusive: true, Keys: 4}, 8, 40, full, 0},
		{model.Config{HeapCount: 1, Exclusive: true, Capacities: true, Keys: 4, Pinned: true}, 12, 25, full, 8},
		{model.Config{HeapCount: 1, Exclusive: false, Keys: 4, Pinned: true}, 8, 40, full, 0},
		{model.Config{HeapCount: 4, Exclusive: true, Keys: 5}, 16, 16, full, 8},
		{model.Config{HeapCount: 3, Exclusive: true, Global: true, Capacities: true, Keys: 4}, 8, 40, full, 0},
		{model.Config{HeapCount: 3, Exclusive: false, Capacities: true, Keys: 4}, 8, 40, full, 0},
		{model.Config{HeapCount: 2, Exclusive: false, Global: true, Keys: 4, Pinned: true}, 8, 40, full, 0},
		{model.Config{HeapCount: 2, Exclusive: true, Capacities: true, Keys: 6, Pinned: true}, 16, 16, full, 8},
		{model.Config{HeapCount: 2, Exclusive: true, Global: true, Capacities: true, Keys: 6}, 32, 8, full, 8},
		{model.Config{HeapCount: 1, Exclusive: true, Capacities: true, Keys: 3}, 24, 10, full, 8},
		{model.Config{HeapCount: 1, Exclusive: false, Keys: 3}, 8, 40, full, 0},
	}
}

// porcupineModel adapts a Spec to porcupine. The whole pool is one
// partition: Acquire reads every key.
func porcupineModel(sp model.Spec) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return model.State{} },
		Step: func(state, input, output any) (bool, any) {
			return sp.Step(state.(model.State), input.(model.Input), output.(model.Output))
		},
		Equal: func(a, b any) bool { return a.(model.State) == b.(model.State) },
		// Equal compares every field, the clock and the deadlines too;
		// Hash must give equal states equal hashes, and hashes the clock
		// and the deadlines as well, so that states a step apart, or
		// differing only in when a rest ends, do not share a bucket.
		Hash: func(state any) uint64 {
			s := state.(model.State)
			var h uint64 = 14695981039346656037
			mix := func(v uint64) {
				h ^= v
				h *= 1099511628211
			}
			for _, e := range s.Keys {
				for _, v := range [...]int32{int32(e.Status), b2i(e.Excluded), b2i(e.Suspended), e.Prio, e.Cap, e.Anon, e.Leases} {
					mix(uint64(uint32(v)))
				}
				mix(uint64(e.RestUntil))
			}
			mix(uint64(s.Now))
			return h
		},
		DescribeOperation: func(input, output any) string {
			return model.Describe(input.(model.Input), output.(model.Output))
		},
		DescribeState: func(state any) string { return sp.DescribeState(state.(model.State)) },
	}
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// starts are where a history's clock begins: at the scheduler's start,
// far from it, and so near the end of int64 that the first Advance of an
// hour or more takes the clock to its end, where every deadline is never.
var starts = []time.Duration{0, 100 * 365 * 24 * time.Hour, math.MaxInt64 - 2*time.Hour}

// record runs one history on p: every client issues its calls at the same
// time, released by one barrier, then ends the holds it has left, all
// recorded. Timestamps come from one atomic counter, so an operation that
// returned before another was called has the smaller stamps.
//
// Before the others call, client 0 adds the pinned resource (if the shape
// has one) and moves the clock to the history's start (one of starts, by
// seed). An Advance is recorded as its step of the clock and one timer
// call per key that may rest, each open from the step (stamped at the
// step's instant, before any other call can read the new time) until the
// Advance returns: a rest that came due ends at some moment in between,
// by the timer's callbacks (one rest, under one shard's lock, at a time)
// or by a call that finds it over, while other calls run (see
// model.OpStep).
func record(p model.Pool, sh shape, seed uint64) []porcupine.Operation {
	var clock atomic.Int64
	logs := make([][]porcupine.Operation, sh.clients)
	var ready, done sync.WaitGroup
	begin := make(chan struct{})
	var slots chan struct{}
	if sh.inFlight > 0 {
		slots = make(chan struct{}, sh.inFlight)
	}
	start := starts[seed%uint64(len(starts))]
	var resting []int // the keys that may rest: all but the pinned one
	for k := range sh.cfg.Keys {
		if !sh.cfg.Pinned || k != sh.cfg.PinnedItem().Key {
			resting = append(resting, k)
		}
	}
	prologue := make(chan struct{}) // closed once client 0 has set the history up
	// advancing makes an Advance wait for the one before it outside its
	// recorded interval, not inside (the clock serialises them anyway):
	// an interval open while it waits would overlap every call of the
	// wait, and porcupine's search grows with the calls that overlap.
	var advancing sync.Mutex
	// mayRest marks the keys a Suspend or Lease.Cooldown was called on:
	// only they get timer calls. A call marks its key before it starts,
	// and one that starts after a step reads the new time (it waits for
	// the step, see model.Real), so its deadline is not due at the step.
	var mayRest atomic.Uint32
	for id := range sh.clients {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			r := rand.New(rand.NewPCG(seed, uint64(id)))
			c := &model.Client{P: p}
			advance := func(d time.Duration) {
				advancing.Lock()
				defer advancing.Unlock()
				call := clock.Add(1)
				var stepped int64
				var keys []int
				var timers []int64
				p.Advance(d, func() {
					stepped = clock.Add(1)
					marked := mayRest.Load()
					for _, k := range resting {
						if marked&(1<<k) != 0 {
							keys = append(keys, k)
							timers = append(timers, clock.Add(1))
						}
					}
				})
				logs[id] = append(logs[id], porcupine.Operation{
					ClientId: id, Input: model.Input{Kind: model.OpStep, Dur: d}, Call: call, Output: model.Output{Key: -1}, Return: stepped,
				})
				for i, k := range keys {
					logs[id] = append(logs[id], porcupine.Operation{
						ClientId: sh.clients + k, Input: model.Input{Kind: model.OpExpire, Key: k}, Call: timers[i], Output: model.Output{Key: -1}, Return: clock.Add(1),
					})
				}
			}
			do := func(in model.Input) {
				if slots != nil {
					slots <- struct{}{}
					defer func() { <-slots }()
				}
				switch in.Kind {
				case model.OpAdvance:
					advance(in.Dur)
					return
				case model.OpSuspend, model.OpLeaseCooldown:
					mayRest.Or(1 << in.Key)
				}
				call := clock.Add(1)
				out := c.Do(in)
				logs[id] = append(logs[id], porcupine.Operation{
					ClientId: id, Input: in, Call: call, Output: out, Return: clock.Add(1),
				})
			}
			ready.Done()
			<-begin
			if id == 0 {
				if sh.cfg.Pinned {
					do(model.Input{Kind: model.OpAdd, Key: sh.cfg.PinnedItem().Key, Prio: sh.cfg.PinnedItem().Prio, Cap: sh.cfg.PinnedItem().Cap})
				}
				if start > 0 {
					advance(start)
				}
				close(prologue)
			}
			<-prologue
			for range sh.opsEach {
				do(c.Next(r, sh.cfg, sh.mix))
			}
			for len(c.Leases) > 0 {
				do(model.Input{Kind: model.OpLeaseRelease, Slot: 0, Key: model.KeyIndex(c.Leases[0].Key())})
			}
		}()
	}
	ready.Wait()
	close(begin)
	done.Wait()
	var ops []porcupine.Operation
	for _, l := range logs {
		ops = append(ops, l...)
	}
	return ops
}

// verdict checks one history. Anything but Ok (Illegal, or Unknown after
// the time limit) is a failure; the visualisation goes to a file whose
// path the failure names.
func verdict(t *testing.T, sp model.Spec, ops []porcupine.Operation, name string) (porcupine.CheckResult, string, porcupine.LinearizationInfo) {
	t.Helper()
	m := porcupineModel(sp)
	res, info := porcupine.CheckOperationsVerbose(m, ops, *timeout)
	if res == porcupine.Ok {
		return res, "", info
	}
	t.Log(explain(sp, ops, info))
	dir := *visDir
	if dir == "" {
		// Not t.TempDir: that is deleted when the test ends, and the file
		// is wanted after a failure.
		var err error
		if dir, err = os.MkdirTemp("", "crs-lin-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".html")
	if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(listing(ops)), 0o644); err != nil {
		t.Logf("history listing not written: %v", err)
	}
	if err := save(filepath.Join(dir, name+".json"), sp, ops); err != nil {
		t.Logf("history not saved: %v", err)
	}
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		t.Logf("visualisation failed: %v", err)
		path = "(not written: " + err.Error() + ")"
	}
	return res, path + " (beside it: " + name + ".txt, the history as text, and " + name + ".json, to check again with -lin.replay)", info
}

// longest is the longest linearizable prefix porcupine found: the whole
// history's linearization when it is linearizable.
func longest(info porcupine.LinearizationInfo) []porcupine.Operation {
	var seq []porcupine.Operation
	for _, part := range info.PartialLinearizationsOperations() {
		for _, s := range part {
			if len(s) > len(seq) {
				seq = s
			}
		}
	}
	return seq
}

// timeCounts is what the clock did in the histories, so that the log
// shows the checks exercising it: rests the timer ended, rests that
// became never (a deadline past the end of int64), and histories whose
// clock reached its end.
type timeCounts struct{ ended, never, clockEnds int }

// count adds what happened to the clock along a linearization.
func (c *timeCounts) count(sp model.Spec, seq []porcupine.Operation) {
	state := model.State{}
	for _, op := range seq {
		in := op.Input.(model.Input)
		_, next := sp.Step(state, in, op.Output.(model.Output))
		switch in.Kind {
		case model.OpExpire:
			if state.Keys[in.Key].Suspended && !next.Keys[in.Key].Suspended {
				c.ended++
			}
		case model.OpSuspend, model.OpLeaseCooldown:
			if next.Keys[in.Key].RestUntil == model.Never && state.Keys[in.Key].RestUntil != model.Never {
				c.never++
			}
		}
		state = next
	}
	if state.Now == model.Never-1 {
		c.clockEnds++
	}
}

// listing is the history as text, one operation a line in call order.
func listing(ops []porcupine.Operation) string {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	for _, op := range sorted {
		fmt.Fprintf(&b, "[%d,%d] c%d %s\n", op.Call, op.Return, op.ClientId, model.Describe(op.Input.(model.Input), op.Output.(model.Output)))
	}
	return b.String()
}

// explain replays the longest linearizable prefix porcupine found and
// lists the operations it could not place after it, each with what the
// model would have allowed there: the place to start reading a failure.
func explain(sp model.Spec, ops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	longest := longest(info)
	var b strings.Builder
	state := model.State{}
	placed := map[[2]int64]bool{}
	fmt.Fprintf(&b, "longest linearizable prefix: %d of %d operations; its last 12:\n", len(longest), len(ops))
	for i, op := range longest {
		_, state = sp.Step(state, op.Input.(model.Input), op.Output.(model.Output))
		placed[[2]int64{op.Call, op.Return}] = true
		if i >= len(longest)-12 {
			fmt.Fprintf(&b, "  [%d,%d] c%d %s\n", op.Call, op.Return, op.ClientId, model.Describe(op.Input.(model.Input), op.Output.(model.Output)))
		}
	}
	fmt.Fprintf(&b, "state then: %s\n", sp.DescribeState(state))
	var rest []porcupine.Operation
	for _, op := range ops {
		if !placed[[2]int64{op.Call, op.Return}] {
			rest = append(rest, op)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Call < rest[j].Call })
	b.WriteString("first operations left over (model allows):\n")
	for _, op := range rest[:min(len(rest), 8)] {
		in := op.Input.(model.Input)
		fmt.Fprintf(&b, "  [%d,%d] c%d %s   (allowed: %s)\n", op.Call, op.Return, op.ClientId, model.Describe(in, op.Output.(model.Output)), sp.Allowed(state, in))
	}
	return b.String()
}

// spec is the model for cfg.
func spec(cfg model.Config) model.Spec { return cfg.Spec() }

func baseSeed() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return uint64(time.Now().UnixNano())
}

// TestHistoriesAreLinearizable records concurrent histories of every
// operation on a small key space and checks each against the sequential
// model with porcupine. A history that is not linearizable is a
// concurrency bug: an operation whose effect other goroutines see before
// or after it happened, or never.
func TestHistoriesAreLinearizable(t *testing.T) {
	n := *histories
	if testing.Short() {
		n = max(n/4, 1)
	}
	seed := baseSeed()
	t.Logf("seed %d (rerun with -lin.seed=%d)", seed, seed)
	all := shapes()
	if *only >= 0 {
		all = all[*only : *only+1]
	}
	var ops, slowest int
	var slowestTime time.Duration
	perShape := make([]time.Duration, len(all))
	var timed timeCounts
	for i := range n {
		sh := all[i%len(all)]
		p, err := sh.cfg.New()
		if err != nil {
			t.Fatal(err)
		}
		history := record(p, sh, seed+uint64(i))
		p.Shutdown()
		ops += len(history)
		began := time.Now()
		name := fmt.Sprintf("history-%d-seed-%d", i, seed+uint64(i))
		res, path, info := verdict(t, spec(sh.cfg), history, name)
		d := time.Since(began)
		if d > slowestTime {
			slowestTime, slowest = d, i
		}
		perShape[i%len(all)] = max(perShape[i%len(all)], d)
		if res != porcupine.Ok {
			t.Fatalf("history %d (%v, %d goroutines, %d operations, seed %d) is %v; visualisation: %s\nrerun: go test -run 'TestHistoriesAreLinearizable$' -lin.seed=%d -histories=%d",
				i, sh.cfg, sh.clients, len(history), seed+uint64(i), res, path, seed, i+1)
		}
		if testing.Verbose() { // replaying the linearization costs a tenth of the run
			timed.count(spec(sh.cfg), longest(info))
		}
	}
	t.Logf("%d histories, %d operations, all linearizable; slowest check: history %d, %v; slowest per shape: %v", n, ops, slowest, slowestTime, perShape)
	if testing.Verbose() {
		t.Logf("the clock: %d rests ended by the timer, %d rests made never, %d histories ran the clock to its end", timed.ended, timed.never, timed.clockEnds)
	}
}

// TestCheckerRejectsBrokenVariants holds porcupine to the same standard
// as the scheduler: each broken variant must be rejected within a bounded
// number of histories. The check-then-act variants are correct in every
// sequential run, so this is also what shows that concurrent histories,
// not just random ones, are being checked.
func TestCheckerRejectsBrokenVariants(t *testing.T) {
	const attempts = 60
	for _, b := range model.BrokenVariants() {
		t.Run(b.Name, func(t *testing.T) {
			seed := baseSeed()
			all := shapes()
			for i := range attempts {
				sh := all[i%len(all)]
				if b.Exact && sh.cfg.HeapCount != 1 {
					continue
				}
				real, err := sh.cfg.New()
				if err != nil {
					t.Fatal(err)
				}
				history := record(b.Wrap(real), sh, seed+uint64(i))
				real.Shutdown()
				res := porcupine.CheckOperationsTimeout(porcupineModel(spec(sh.cfg)), history, *timeout)
				if res == porcupine.Illegal {
					t.Logf("rejected at history %d (%v, %d operations)", i, sh.cfg, len(history))
					return
				}
			}
			t.Fatalf("%d histories of broken variant %s all passed: the checker misses the bug (seed %d)", attempts, b.Name, seed)
		})
	}
}

// saved is a history as written to disk for -lin.replay.
type saved struct {
	Spec model.Spec
	Ops  []savedOp
}

type savedOp struct {
	Client       int
	Call, Return int64
	In           model.Input
	Out          model.Output
}

func save(path string, sp model.Spec, ops []porcupine.Operation) error {
	h := saved{Spec: sp}
	for _, op := range ops {
		h.Ops = append(h.Ops, savedOp{op.ClientId, op.Call, op.Return, op.Input.(model.Input), op.Output.(model.Output)})
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// TestReplaySavedHistory checks a history saved by a failed run again,
// for instance with a longer -lin.timeout to tell an Unknown from an
// Illegal. It does nothing without -lin.replay.
func TestReplaySavedHistory(t *testing.T) {
	if *replay == "" {
		t.Skip("no -lin.replay file given")
	}
	b, err := os.ReadFile(*replay)
	if err != nil {
		t.Fatal(err)
	}
	var h saved
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	ops := make([]porcupine.Operation, len(h.Ops))
	for i, op := range h.Ops {
		ops[i] = porcupine.Operation{ClientId: op.Client, Call: op.Call, Return: op.Return, Input: op.In, Output: op.Out}
	}
	began := time.Now()
	res, path, _ := verdict(t, h.Spec, ops, "replay")
	t.Logf("%v after %v", res, time.Since(began))
	if res != porcupine.Ok {
		t.Fatalf("%s is %v; visualisation: %s", *replay, res, path)
	}
}
