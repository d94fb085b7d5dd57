package scheduler_test

// FuzzOperationSequences decodes bytes into a scheduler configuration and
// a sequence of calls, with panics injected into the comparator, the key
// function, the strategy and an observer, and after every call checks
// CheckInvariants, the result against the model (model_test.go), and
// every key's state and value, Len and Stats against the model. A call
// that panicked must have had no effect.
//
// go test runs the seed corpus (testdata/fuzz/FuzzOperationSequences);
// to search for longer:
//
//	go test -run '^$' -fuzz FuzzOperationSequences -fuzztime 10m ./scheduler/

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
	"github.com/crsched/crs/stats"
)

// genPool is what the harness drives: the scheduler, or a broken variant
// wrapping it (see TestGeneratedChecksRejectBrokenVariants).
type genPool interface {
	Add(*genRes) error
	BatchAdd([]*genRes) error
	Acquire() (*genRes, error)
	AcquireContext(context.Context) (*genRes, error)
	Lease(context.Context, ...scheduler.LeaseOption) (scheduler.Lease[*genRes, string], error)
	Release(string) error
	Update(*genRes) error
	Exclude(string) error
	Include(string) error
	Suspend(string, time.Duration) error
	Remove(string) error
	Get(string) (*genRes, error)
	Len() int
	Stats() stats.Stats
	CheckInvariants() error
	StateOf(string) string
	Shutdown()
}

// genPanic is what every injected panic panics with, so that the harness
// tells an injected panic from a bug.
type genPanic struct{ where string }

// genHooks are the user functions of a generated scheduler, each able to
// panic on demand.
type genHooks struct {
	cmpCountdown atomic.Int64 // the comparator panics when this reaches 0
	strategy     atomic.Bool  // the strategy panics once when set
	observer     atomic.Bool  // the observer panics on every event while set
	thrown       atomic.Int64 // observer panics thrown
	rr           atomic.Uint64
}

const genDisarmed = 1 << 40

func (h *genHooks) compare(a, b *genRes) int {
	if h.cmpCountdown.Add(-1) == 0 {
		panic(genPanic{"comparator"})
	}
	return a.prio - b.prio
}

func (h *genHooks) key(r *genRes) string {
	if strings.HasSuffix(r.key, "!") {
		panic(genPanic{"key func"})
	}
	return r.key
}

func (h *genHooks) Select(v acquire.ShardView) int {
	if h.strategy.CompareAndSwap(true, false) {
		panic(genPanic{"strategy"})
	}
	return int(h.rr.Add(1) % uint64(v.ShardCount()))
}

func (h *genHooks) OnEvent(events.Event[string]) {
	if h.observer.Load() {
		h.thrown.Add(1)
		panic(genPanic{"observer"})
	}
}

// genBytes reads the fuzz input; past its end it reads zeros, and done
// tells the harness to stop.
type genBytes struct {
	b []byte
	i int
}

func (g *genBytes) next() int {
	if g.i >= len(g.b) {
		g.i++
		return 0
	}
	g.i++
	return int(g.b[g.i-1])
}

func (g *genBytes) done() bool { return g.i >= len(g.b) }

var genCancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// genConfig decodes the configuration from the first two bytes.
type genConfig struct {
	heaps                                  int
	exclusive, capacities, global          bool
	keys                                   int
	cmpPanics, keyPanics, stratPanics, obs bool
}

func decodeGenConfig(g *genBytes) genConfig {
	a, b := g.next(), g.next()
	return genConfig{
		heaps: 1 + a%4, exclusive: a&4 != 0, capacities: a&8 != 0, global: a&16 != 0,
		keys:      3 + (a>>5)%4,
		cmpPanics: b&1 != 0, keyPanics: b&2 != 0, stratPanics: b&4 != 0, obs: b&8 != 0,
	}
}

func (c genConfig) String() string {
	return fmt.Sprintf("heaps=%d exclusive=%v capacities=%v global=%v keys=%d panics(cmp=%v key=%v strategy=%v observer=%v)",
		c.heaps, c.exclusive, c.capacities, c.global, c.keys, c.cmpPanics, c.keyPanics, c.stratPanics, c.obs)
}

func newGenScheduler(c genConfig, h *genHooks, clock config.Clock) (*scheduler.Scheduler[*genRes, string], error) {
	cfg := config.Config[*genRes, string]{
		HeapCount:       c.heaps,
		Comparator:      h.compare,
		KeyFunc:         h.key,
		AcquireStrategy: h,
		Clock:           clock,
		EventQueueSize:  1 << 14,
		Observers:       []events.Observer[string]{h},
	}
	if c.exclusive {
		cfg.AcquirePolicy = config.Exclusive
	}
	if c.capacities {
		cfg.Capacity = func(r *genRes) int { return r.cap }
	}
	if c.global {
		cfg.Ordering = config.GlobalOrder
	}
	return scheduler.New(cfg)
}

// genWrap turns the scheduler into the pool the harness drives; nil means
// the scheduler itself.
type genWrap func(s *scheduler.Scheduler[*genRes, string], h *genHooks) genPool

// runGen runs the operation sequence data encodes and returns the first
// disagreement with the model or the invariants, or nil.
func runGen(data []byte, wrap genWrap) (err error) {
	g := &genBytes{b: data}
	c := decodeGenConfig(g)
	h := &genHooks{}
	h.cmpCountdown.Store(genDisarmed)
	// A clock far from zero, moved only by Advance calls (whose timers
	// fire inside them), so that deadlines near the end of int64 come up.
	clock := fakeclock.New()
	s, err := newGenScheduler(c, h, clock)
	if err != nil {
		return err
	}
	var p genPool = s
	if wrap != nil {
		p = wrap(s, h)
	}
	defer p.Shutdown()
	m := &genModel{exclusive: c.exclusive, keys: c.keys}
	switch {
	case c.heaps == 1:
		m.order = 2
	case c.global:
		m.order = 1
	}
	var leases, stale []scheduler.Lease[*genRes, string]
	var trace []string
	failf := func(format string, args ...any) error {
		return fmt.Errorf("%v\n%s\ncalls:\n  %s", c, fmt.Sprintf(format, args...), strings.Join(trace, "\n  "))
	}
	for n := 0; n < 300 && !g.done(); n++ {
		op := genOp{kind: genKind(g.next() % int(gKinds)), key: g.next() % c.keys, prio: g.next() % 5, cap: 1}
		if c.capacities {
			op.cap = g.next()%5 - 1 // values below 1 mean 1
		}
		op.dur = genDurations[op.prio%len(genDurations)]
		inject := g.next()
		poison := c.keyPanics && inject%5 == 1
		// Not in Advance: the comparator runs there on the timer's
		// behalf, whose caller no one is (the system clock's timer
		// goroutine would crash), so no panic is injected there.
		cmpArmed := c.cmpPanics && inject%4 == 0 && op.kind != gAdvance
		stratArmed := c.stratPanics && inject%6 == 2
		if cmpArmed {
			h.cmpCountdown.Store(int64(inject>>2)%8 + 1)
		}
		h.strategy.Store(stratArmed)
		h.observer.Store(c.obs && inject%3 == 0)
		res := func(key, prio, capacity int) *genRes {
			r := &genRes{key: genKey(key), prio: prio, cap: capacity}
			if poison {
				r.key += "!"
			}
			return r
		}
		switch op.kind {
		case gBatchAdd:
			for range g.next() % 4 {
				op.batch = append(op.batch, genItem{g.next() % c.keys, g.next() % 5, op.cap})
			}
		case gLeaseRelease, gLeaseCooldown:
			if len(leases) == 0 {
				op.kind = gLease
				break
			}
			op.slot = g.next() % len(leases)
			op.key = genIndex(leases[op.slot].Key())
		case gStaleLease:
			if len(stale) == 0 {
				op.kind = gGet
				break
			}
			op.slot = g.next() % len(stale)
			op.key = genIndex(stale[op.slot].Key())
		}
		out := genOut{err: "ok", key: -1}
		took := func(r *genRes, err error) {
			out.err = genClass(err)
			if err == nil {
				out.key, out.prio, out.cap = genIndex(r.key), r.prio, r.cap
			}
		}
		panicked := func() (recovered any) {
			defer func() { recovered = recover() }()
			switch op.kind {
			case gAdd:
				out.err = genClass(p.Add(res(op.key, op.prio, op.cap)))
			case gBatchAdd:
				rs := make([]*genRes, len(op.batch))
				for i, it := range op.batch {
					rs[i] = res(it.key, it.prio, it.cap)
				}
				out.err = genClass(p.BatchAdd(rs))
			case gAcquire:
				took(p.Acquire())
			case gAcquireCtx:
				took(p.AcquireContext(genCancelled))
			case gLease:
				l, err := p.Lease(genCancelled)
				took(l.Value(), err)
				if err == nil {
					leases = append(leases, l)
				}
			case gLeaseRelease, gLeaseCooldown:
				l := leases[op.slot]
				copyOf := l // taken before the release: it must not work later
				var err error
				if op.kind == gLeaseRelease {
					err = l.Release()
				} else {
					err = l.Cooldown(op.dur)
				}
				out.err = genClass(err)
				if err == nil {
					leases = append(leases[:op.slot], leases[op.slot+1:]...)
					stale = append(stale, copyOf)
				}
			case gStaleLease:
				l := stale[op.slot]
				out.err = genClass(l.Release())
			case gRelease:
				out.err = genClass(p.Release(genKey(op.key)))
			case gUpdate:
				out.err = genClass(p.Update(res(op.key, op.prio, op.cap)))
			case gExclude:
				out.err = genClass(p.Exclude(genKey(op.key)))
			case gInclude:
				out.err = genClass(p.Include(genKey(op.key)))
			case gSuspend:
				out.err = genClass(p.Suspend(genKey(op.key), op.dur))
			case gRemove:
				out.err = genClass(p.Remove(genKey(op.key)))
			case gGet:
				took(p.Get(genKey(op.key)))
			case gAdvance:
				clock.Advance(op.dur)
			}
			return nil
		}()
		h.cmpCountdown.Store(genDisarmed)
		h.strategy.Store(false)
		h.observer.Store(false)
		if panicked != nil {
			trace = append(trace, fmt.Sprintf("%v -> panic %v", op, panicked))
			if _, ok := panicked.(genPanic); !ok || !(cmpArmed || stratArmed || poison) {
				return failf("%v panicked with %v, which was not injected", op, panicked)
			}
		} else {
			trace = append(trace, fmt.Sprintf("%v -> %v", op, out))
			if poison && (op.kind == gAdd || op.kind == gUpdate || (op.kind == gBatchAdd && len(op.batch) > 0)) {
				return failf("%v: the key function panicked, but the call returned %v", op, out)
			}
			before := m.String()
			if ok, allowed := m.step(op, out); !ok {
				return failf("%v returned %v; the model allows %s\nmodel before: %s", op, out, allowed, before)
			}
		}
		if err := observe(p, m); err != nil {
			return failf("after %v: %v\nmodel: %s", op, err, m)
		}
	}
	p.Shutdown() // delivers every queued event: the observer's panics are all counted
	if got, want := p.Stats().ObserverPanics, uint64(h.thrown.Load()); got != want {
		return failf("Stats.ObserverPanics = %d, the observer panicked %d times", got, want)
	}
	return nil
}

// observe compares everything the API shows about the pool with the
// model, and checks the scheduler's own invariants.
func observe(p genPool, m *genModel) error {
	if err := p.CheckInvariants(); err != nil {
		return err
	}
	for k := 0; k < m.keys; k++ {
		if got, want := p.StateOf(genKey(k)), m.state(k); got != want {
			return fmt.Errorf("g%d is %s, the model says %s", k, got, want)
		}
		r, err := p.Get(genKey(k))
		switch e := m.e[k]; {
		case e.status != gLive && !errors.Is(err, crserrors.ErrResourceNotFound):
			return fmt.Errorf("Get(g%d) = %v, %v; the model has no live g%d", k, r, err, k)
		case e.status == gLive && (err != nil || r.prio != e.prio || r.cap != e.cap):
			return fmt.Errorf("Get(g%d) = %v, %v; the model has p=%d c=%d", k, r, err, e.prio, e.cap)
		}
	}
	active, held, excluded, suspended, draining, holders, total := m.counts()
	st := p.Stats()
	got := [...]int{st.ActiveResources, st.HeldResources, st.ExcludedResources, st.SuspendedResources, st.DrainingResources, st.Holders, st.TotalResources, p.Len()}
	want := [...]int{active, held, excluded, suspended, draining, holders, total, total}
	if got != want {
		return fmt.Errorf("Stats (active, held, excluded, suspended, draining, holders, total) and Len = %v, the model says %v", got, want)
	}
	return nil
}

// FuzzOperationSequences is the fuzz target (see the top of the file).
func FuzzOperationSequences(f *testing.F) {
	f.Add([]byte{0x00, 0x00, 0, 0, 1, 0, 2, 0, 0, 0})
	f.Add([]byte{0x0f, 0x0f, 0, 1, 2, 3, 4, 2, 0, 0, 0, 8, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := runGen(data, nil); err != nil {
			t.Fatal(err)
		}
	})
}
