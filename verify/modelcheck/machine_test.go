package modelcheck

import (
	"fmt"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/crsched/crs/verify/model"
)

// machine drives one scheduler (or a broken variant of it) and the model
// side by side, from one goroutine: every call goes to both, and every
// result, value and error sentinel alike, must be one the model allows.
type machine struct {
	cfg   model.Config
	sp    model.Spec
	real  model.Real
	c     *model.Client
	state model.State
	steps int
	trace []string // the calls so far, for the failure message
}

func newMachine(t *rapid.T, wrap func(model.Real) model.Pool) *machine {
	cfg := model.Config{
		HeapCount:  rapid.IntRange(1, 4).Draw(t, "heaps"),
		Exclusive:  rapid.Bool().Draw(t, "exclusive"),
		Capacities: rapid.Bool().Draw(t, "capacities"),
		Keys:       rapid.IntRange(3, model.MaxKeys).Draw(t, "keys"),
		Global:     rapid.Bool().Draw(t, "global"),
	}
	real, err := cfg.New()
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	var p model.Pool = real
	if wrap != nil {
		p = wrap(real)
	}
	return &machine{cfg: cfg, sp: cfg.Spec(), real: real, c: &model.Client{P: p}}
}

// apply performs in on the scheduler and steps the model with its result.
func (m *machine) apply(t *rapid.T, in model.Input) model.Output {
	t.Helper()
	before := m.state
	out := m.c.Do(in)
	ok, next := m.sp.Step(before, in, out)
	m.trace = append(m.trace, model.Describe(in, out))
	if !ok {
		t.Fatalf("%v (%v): %s\nthe model allows: %s\nmodel state before: %s\ncalls so far:\n  %s",
			in, m.cfg, model.Describe(in, out), m.sp.Allowed(before, in), m.sp.DescribeState(before),
			strings.Join(m.trace, "\n  "))
	}
	m.state = next
	return out
}

func (m *machine) key(t *rapid.T) int { return rapid.IntRange(0, m.cfg.Keys-1).Draw(t, "key") }

func (m *machine) item(t *rapid.T) model.Item {
	capacity := 1
	if m.cfg.Capacities {
		// Values below 1 mean 1: the model must agree.
		capacity = rapid.IntRange(-1, 3).Draw(t, "cap")
	}
	return model.Item{Key: m.key(t), Prio: rapid.IntRange(0, 3).Draw(t, "prio"), Cap: capacity}
}

func (m *machine) actions() map[string]func(*rapid.T) {
	keyed := func(k model.Kind) func(*rapid.T) {
		return func(t *rapid.T) { m.apply(t, model.Input{Kind: k, Key: m.key(t)}) }
	}
	return map[string]func(*rapid.T){
		"Add": func(t *rapid.T) {
			it := m.item(t)
			m.apply(t, model.Input{Kind: model.OpAdd, Key: it.Key, Prio: it.Prio, Cap: it.Cap})
		},
		"BatchAdd": func(t *rapid.T) {
			n := rapid.IntRange(0, 4).Draw(t, "batch")
			in := model.Input{Kind: model.OpBatchAdd}
			for range n {
				in.Batch = append(in.Batch, m.item(t))
			}
			m.apply(t, in)
		},
		"Update": func(t *rapid.T) {
			it := m.item(t)
			m.apply(t, model.Input{Kind: model.OpUpdate, Key: it.Key, Prio: it.Prio, Cap: it.Cap})
		},
		"Acquire":        func(t *rapid.T) { m.apply(t, model.Input{Kind: model.OpAcquire}) },
		"AcquireContext": func(t *rapid.T) { m.apply(t, model.Input{Kind: model.OpAcquireCtx}) },
		"Lease":          func(t *rapid.T) { m.apply(t, model.Input{Kind: model.OpLease}) },
		"LeaseRelease":   m.endLease(model.OpLeaseRelease),
		"LeaseCooldown":  m.endLease(model.OpLeaseCooldown),
		"LeaseFail":      m.endLease(model.OpLeaseFail),
		"Suspend": func(t *rapid.T) {
			m.apply(t, model.Input{Kind: model.OpSuspend, Key: m.key(t), Bad: rapid.IntRange(0, 7).Draw(t, "zero") == 0, Dur: duration(t)})
		},
		"Advance": func(t *rapid.T) { m.apply(t, model.Input{Kind: model.OpAdvance, Dur: duration(t)}) },
		"StaleLeaseRelease": func(t *rapid.T) {
			if m.c.Stale() == 0 {
				t.Skip("no released lease to retry")
			}
			m.apply(t, model.Input{Kind: model.OpStaleLeaseRelease, Slot: rapid.IntRange(0, m.c.Stale()-1).Draw(t, "stale")})
		},
		"Release":    keyed(model.OpRelease),
		"Exclude":    keyed(model.OpExclude),
		"Include":    keyed(model.OpInclude),
		"Remove":     keyed(model.OpRemove),
		"Get":        keyed(model.OpGet),
		"DrainCheck": m.drainCheck,
		"":           m.check,
	}
}

func (m *machine) endLease(k model.Kind) func(*rapid.T) {
	return func(t *rapid.T) {
		if len(m.c.Leases) == 0 {
			t.Skip("no lease to end")
		}
		slot := rapid.IntRange(0, len(m.c.Leases)-1).Draw(t, "lease")
		m.apply(t, model.Input{Kind: k, Slot: slot, Key: model.KeyIndex(m.c.Leases[slot].Key()), Dur: duration(t)})
	}
}

// duration draws what Suspend, Lease.Cooldown and Advance take.
func duration(t *rapid.T) time.Duration {
	return rapid.SampledFrom(model.Durations).Draw(t, "duration")
}

// check runs after every action: what the public API reports about the
// whole pool must match the model. It changes nothing.
func (m *machine) check(t *rapid.T) {
	t.Helper()
	m.steps++
	for k := range m.cfg.Keys {
		m.apply(t, model.Input{Kind: model.OpGet, Key: k})
	}
	m.apply(t, model.Input{Kind: model.OpLen})
	m.apply(t, model.Input{Kind: model.OpStats})
	st := m.real.Stats()
	sum := 0
	for _, n := range st.HeapSizes {
		sum += n
	}
	switch {
	case sum != st.ActiveResources:
		t.Fatalf("heap sizes %v add up to %d, but %d active", st.HeapSizes, sum, st.ActiveResources)
	case st.InactiveResources != st.HeldResources+st.ExcludedResources+st.SuspendedResources+st.EjectedResources+st.RateLimitedResources:
		t.Fatalf("inactive %d is not held+excluded+resting in %+v", st.InactiveResources, st)
	case st.TotalResources != st.ActiveResources+st.InactiveResources || st.TotalResources != m.sp.Len(m.state):
		t.Fatalf("total %d is not active+inactive, or not the model's %d, in %+v", st.TotalResources, m.sp.Len(m.state), st)
	case st.EjectedResources != 0 || st.RateLimitedResources != 0 || st.Ejections != 0:
		t.Fatalf("ejection or rate limits without their configuration: %+v", st)
	case st.Waiters != 0:
		t.Fatalf("%d waiters after calls that never wait", st.Waiters)
	case st.EmptyHeaps+st.NonEmptyHeaps != st.HeapCount || len(st.HeapSizes) != st.HeapCount:
		t.Fatalf("heap counts inconsistent: %+v", st)
	}
	if m.steps%8 == 0 {
		m.drainCheck(t)
	}
}

// drainCheck takes everything the pool can give, each result checked
// (with one shard, in exact priority order), checks that the count is
// what the model says was free, and gives it all back. Under Exclusive it
// acquires until nothing is left and releases; under Shared, where
// acquiring takes nothing, it excludes each resource it gets and includes
// them all again.
func (m *machine) drainCheck(t *rapid.T) {
	t.Helper()
	var want int
	if m.cfg.Exclusive {
		want = m.sp.FreeSlots(m.state)
	} else {
		want = m.sp.Counts(m.state).Active
	}
	var got []int
	for {
		out := m.apply(t, model.Input{Kind: model.OpAcquire})
		if out.Err != model.OK {
			break
		}
		got = append(got, out.Key)
		if !m.cfg.Exclusive {
			m.apply(t, model.Input{Kind: model.OpExclude, Key: out.Key})
		}
		if len(got) > want {
			break
		}
	}
	if len(got) != want {
		t.Fatalf("drained %d acquisitions (%v), the model had %d free", len(got), got, want)
	}
	for _, k := range got {
		if m.cfg.Exclusive {
			m.apply(t, model.Input{Kind: model.OpRelease, Key: k})
		} else {
			m.apply(t, model.Input{Kind: model.OpInclude, Key: k})
		}
	}
}

// run is the property: a random sequence of calls on a fresh scheduler.
func run(wrap func(model.Real) model.Pool) func(*rapid.T) {
	return func(t *rapid.T) {
		m := newMachine(t, wrap)
		defer m.real.Shutdown()
		t.Repeat(m.actions())
	}
}

func (m *machine) String() string { return fmt.Sprint(m.cfg) }
