package model

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
	"github.com/crsched/crs/stats"
)

// Lease is the scheduler's lease on a Res.
type Lease = scheduler.Lease[*Res, string]

// Pool is the part of the scheduler's API the checks drive. Real is the
// scheduler itself; the broken variants (broken.go) wrap it, so that the
// tests can show each checker rejecting a scheduler that is wrong.
type Pool interface {
	Add(*Res) error
	BatchAdd([]*Res) error
	Acquire() (*Res, error)
	AcquireContext(context.Context) (*Res, error)
	Lease(context.Context, ...scheduler.LeaseOption) (Lease, error)
	// ReleaseLease, CooldownLease and FailLease end l (l.Release,
	// l.Cooldown, l.Fail, through the pool so that a wrapper can intercept
	// them).
	ReleaseLease(l *Lease) error
	CooldownLease(l *Lease, d time.Duration) error
	FailLease(l *Lease) error
	Release(string) error
	Suspend(string, time.Duration) error
	Update(*Res) error
	Exclude(string) error
	Include(string) error
	Remove(string) error
	Get(string) (*Res, error)
	Len() int
	Stats() stats.Stats
	// Advance moves the scheduler's clock by d in one step, calling
	// stepped (if not nil) at the step, before any other goroutine can
	// read the new time, and fires the timers that came due before it
	// returns.
	Advance(d time.Duration, stepped func())
	Shutdown()
}

// Real is the scheduler as a Pool, with the clock it runs on.
type Real struct {
	*scheduler.Scheduler[*Res, string]
	clock *fakeclock.Clock
	epoch time.Time // the clock's reading at New
}

// Advance moves the clock by d in one step, calls stepped, and fires the
// timers that came due (fakeclock.Clock.Step).
func (r Real) Advance(d time.Duration, stepped func()) { r.clock.Step(d, stepped) }

// Suspend suspends id for d, on one side of any step of the clock: it
// reads the clock twice, for the deadline and to arm the timer for it,
// and a step in between could arm the timer a step late.
func (r Real) Suspend(id string, d time.Duration) error {
	defer r.clock.Freeze()()
	return r.Scheduler.Suspend(id, d)
}

// ReleaseLease releases l.
func (Real) ReleaseLease(l *Lease) error { return l.Release() }

// CooldownLease ends l with a cooldown of d, on one side of any step of
// the clock (see Suspend).
func (r Real) CooldownLease(l *Lease, d time.Duration) error {
	defer r.clock.Freeze()()
	return l.Cooldown(d)
}

// FailLease ends l as a failure.
func (Real) FailLease(l *Lease) error { return l.Fail() }

// Rest is the duration a Suspend or Cooldown asks for when its input
// names none. The checks' clock moves only at Advance.
const Rest = time.Hour

// Durations are what Suspend, Lease.Cooldown and Advance take in the
// checks: small ones; the same ones for all three, so that an Advance can
// land on a deadline, or a nanosecond short of it or past it; large ones;
// and one so large that a deadline would pass the end of int64.
var Durations = []time.Duration{time.Nanosecond, time.Millisecond, time.Second,
	time.Hour - time.Nanosecond, time.Hour, 100 * 365 * 24 * time.Hour, math.MaxInt64}

// Config describes the scheduler a check runs against.
type Config struct {
	HeapCount int
	Exclusive bool
	// Capacities lets resources take more than one holder (Capacity is
	// read from Res.Cap); without it every resource has capacity 1 whatever
	// Res.Cap says.
	Capacities bool
	Keys       int // key space, 3 to MaxKeys
	// Global selects config.GlobalOrder: Acquire returns a resource of
	// the best priority in the whole pool.
	Global bool
	// Pinned reserves the last key for a resource that is always
	// available: added first with the worst priority and a capacity no
	// history exhausts, never excluded, removed or updated. With it,
	// AcquireContext and Lease with a cancelled context never wait (and
	// Acquire never fails), so no waiter is ever queued.
	Pinned bool
}

// PinnedItem is the always-available resource of a Pinned configuration.
func (c Config) PinnedItem() Item { return Item{Key: c.Keys - 1, Prio: 99, Cap: 1 << 20} }

func (c Config) String() string {
	policy := "shared"
	if c.Exclusive {
		policy = "exclusive"
	}
	order := "shard"
	if c.Global {
		order = "global"
	}
	return fmt.Sprintf("heaps=%d/%s/%s-order/capacities=%v/keys=%d/pinned=%v", c.HeapCount, policy, order, c.Capacities, c.Keys, c.Pinned)
}

// New starts a scheduler for c.
func (c Config) New() (Real, error) {
	clock := fakeclock.New()
	cfg := config.Config[*Res, string]{
		HeapCount:  c.HeapCount,
		Comparator: Compare,
		KeyFunc:    Key,
		Clock:      clock,
	}
	if c.Global {
		cfg.Ordering = config.GlobalOrder
	}
	if c.Exclusive {
		cfg.AcquirePolicy = config.Exclusive
	}
	if c.Capacities || c.Pinned {
		cfg.Capacity = Capacity
	}
	s, err := scheduler.New(cfg)
	return Real{s, clock, clock.Now()}, err
}

// Spec is the model of a scheduler built from c.
func (c Config) Spec() Spec {
	order := AnyActive
	switch {
	case c.HeapCount <= 1:
		order = Best
	case c.Global:
		order = BestPriority
	}
	return Spec{Exclusive: c.Exclusive, Order: order, Keys: c.Keys}
}

// Capped maps a generated capacity to the one the scheduler will apply,
// so that the model sees what the scheduler sees: with Capacities off,
// every resource has capacity 1 and the model is told so. (A Pinned
// configuration installs the Capacity function for its pinned resource
// alone.)
func (c Config) Capped(capacity int) int {
	if !c.Capacities {
		return 1
	}
	return capacity
}

// cancelled is a context that has already ended: Lease and
// AcquireContext with it return a resource if one is available and
// context.Canceled otherwise, without waiting.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Client issues calls on a Pool for one goroutine and keeps what that
// goroutine holds: the leases it may release, and copies of released
// leases to try again (which must be refused).
type Client struct {
	P      Pool
	Leases []Lease
	stale  []Lease
	Held   []int // keys this client acquired anonymously, a hint for Release
}

// Do performs in on the pool and reports the result. A panic inside the
// call is reported as ErrPanic, so that a broken variant that panics is
// rejected rather than crashing the test.
func (c *Client) Do(in Input) (out Output) {
	out.Key = -1
	defer func() {
		if p := recover(); p != nil {
			out = Output{Err: ErrPanic, Key: -1, Detail: fmt.Sprint(p)}
		}
	}()
	var err error
	took := func(r *Res) {
		if err == nil {
			out.Key, out.Prio, out.Cap = KeyIndex(r.Key), r.Prio, r.Cap
		}
	}
	switch in.Kind {
	case OpAdd:
		err = c.P.Add(Item{in.Key, in.Prio, in.Cap}.Res())
	case OpBatchAdd:
		rs := make([]*Res, len(in.Batch))
		for i, it := range in.Batch {
			rs[i] = it.Res()
		}
		err = c.P.BatchAdd(rs)
	case OpAcquire:
		var r *Res
		r, err = c.P.Acquire()
		took(r)
		if err == nil {
			c.Held = append(c.Held, out.Key)
		}
	case OpAcquireCtx:
		var r *Res
		r, err = c.P.AcquireContext(cancelled)
		took(r)
		if err == nil {
			c.Held = append(c.Held, out.Key)
		}
	case OpLease:
		var l Lease
		l, err = c.P.Lease(cancelled)
		if err == nil {
			took(l.Value())
			c.Leases = append(c.Leases, l)
		}
	case OpLeaseRelease, OpLeaseCooldown, OpLeaseFail:
		l := c.Leases[in.Slot]
		c.Leases = append(c.Leases[:in.Slot], c.Leases[in.Slot+1:]...)
		stale := l // a copy taken before the release: it must not work later
		switch in.Kind {
		case OpLeaseRelease:
			err = c.P.ReleaseLease(&l)
		case OpLeaseCooldown:
			err = c.P.CooldownLease(&l, restOf(in))
		default:
			err = c.P.FailLease(&l)
		}
		c.stale = append(c.stale, stale)
		if len(c.stale) > 4 {
			c.stale = c.stale[1:]
		}
	case OpStaleLeaseRelease:
		l := c.stale[in.Slot]
		err = c.P.ReleaseLease(&l)
	case OpRelease:
		err = c.P.Release(KeyName(in.Key))
		if err == nil {
			c.forget(in.Key)
		}
	case OpAdvance:
		c.P.Advance(in.Dur, nil)
	case OpSuspend:
		d := restOf(in)
		if in.Bad {
			d = 0
		}
		err = c.P.Suspend(KeyName(in.Key), d)
	case OpUpdate:
		err = c.P.Update(Item{in.Key, in.Prio, in.Cap}.Res())
	case OpExclude:
		err = c.P.Exclude(KeyName(in.Key))
	case OpInclude:
		err = c.P.Include(KeyName(in.Key))
	case OpRemove:
		err = c.P.Remove(KeyName(in.Key))
	case OpGet:
		var r *Res
		r, err = c.P.Get(KeyName(in.Key))
		took(r)
	case OpLen:
		out.N = c.P.Len()
	case OpStats:
		st := c.P.Stats()
		out.Counts = Counts{st.ActiveResources, st.HeldResources, st.ExcludedResources, st.SuspendedResources, st.DrainingResources, st.Holders}
	default:
		panic(fmt.Sprintf("model: Do has no case for %v", in.Kind))
	}
	out.Err = Classify(err)
	if out.Err == ErrOther {
		out.Detail = err.Error()
	}
	return out
}

func (c *Client) forget(k int) {
	for i, h := range c.Held {
		if h == k {
			c.Held = append(c.Held[:i], c.Held[i+1:]...)
			return
		}
	}
}

// Stale is the number of released-lease copies the client can retry.
func (c *Client) Stale() int { return len(c.stale) }

// Mix weighs the operations a generated history draws. The zero weight
// leaves an operation out.
type Mix [numKinds]int

// DefaultMix draws every operation, keyed ones most.
func DefaultMix() Mix {
	var m Mix
	m[OpAdd] = 10
	m[OpBatchAdd] = 4
	m[OpAcquire] = 14
	m[OpAcquireCtx] = 4
	m[OpLease] = 6
	m[OpRelease] = 14
	m[OpLeaseRelease] = 6
	m[OpLeaseCooldown] = 1
	m[OpLeaseFail] = 1
	m[OpStaleLeaseRelease] = 1
	m[OpSuspend] = 4
	m[OpUpdate] = 6
	m[OpExclude] = 6
	m[OpInclude] = 6
	m[OpRemove] = 6
	m[OpGet] = 5
	m[OpLen] = 2
	m[OpStats] = 2
	m[OpAdvance] = 4
	return m
}

// Next draws the client's next call from mix over cfg's key space. Calls
// that need something the client does not have (a lease to release) are
// replaced by an Acquire.
func (c *Client) Next(r *rand.Rand, cfg Config, mix Mix) Input {
	total := 0
	for _, w := range mix {
		total += w
	}
	pick := r.IntN(total)
	kind := Kind(0)
	for k, w := range mix {
		if pick < w {
			kind = Kind(k)
			break
		}
		pick -= w
	}
	key := func() int { return r.IntN(cfg.Keys) }
	movable := key // keys the call may take out of the pool for good
	if cfg.Pinned {
		movable = func() int { return r.IntN(cfg.Keys - 1) }
	}
	prio := func() int { return r.IntN(4) } // few priorities: ties happen
	capacity := func() int { return cfg.Capped(1 + r.IntN(3)) }
	in := Input{Kind: kind, Key: key()}
	switch kind {
	case OpAdd:
		in.Prio, in.Cap = prio(), capacity()
	case OpUpdate:
		in.Key, in.Prio, in.Cap = movable(), prio(), capacity()
	case OpExclude, OpRemove:
		in.Key = movable()
	case OpSuspend:
		in.Key, in.Bad, in.Dur = movable(), r.IntN(8) == 0, Durations[r.IntN(len(Durations))]
	case OpAdvance:
		// Mostly by the durations that rests take, so that deadlines come
		// due; seldom so far that the clock nears or reaches its end,
		// after which every deadline is never.
		in.Dur = Durations[r.IntN(len(Durations)-2)]
		if r.IntN(16) == 0 {
			in.Dur = Durations[len(Durations)-1-r.IntN(2)]
		}
	case OpBatchAdd:
		n := 1 + r.IntN(3)
		for range n {
			in.Batch = append(in.Batch, Item{key(), prio(), capacity()})
		}
	case OpRelease:
		if len(c.Held) > 0 && r.IntN(4) != 0 {
			in.Key = c.Held[r.IntN(len(c.Held))]
		}
	case OpLeaseRelease, OpLeaseCooldown, OpLeaseFail:
		if len(c.Leases) == 0 {
			return Input{Kind: OpAcquire}
		}
		in.Slot = r.IntN(len(c.Leases))
		in.Key = KeyIndex(c.Leases[in.Slot].Key())
		if kind == OpLeaseCooldown {
			in.Dur = Durations[r.IntN(len(Durations))]
		}
		if cfg.Pinned && in.Key == cfg.PinnedItem().Key && kind == OpLeaseCooldown {
			in.Kind = OpLeaseRelease // a cooldown would take the pinned resource away
		}
	case OpStaleLeaseRelease:
		if len(c.stale) == 0 {
			return Input{Kind: OpAcquire}
		}
		in.Slot = r.IntN(len(c.stale))
		in.Key = KeyIndex(c.stale[in.Slot].Key())
	case OpStats:
		if cfg.HeapCount > 1 {
			// Stats reads the shards one after another: its totals are
			// not one instant's, so only single-shard Stats is atomic.
			return Input{Kind: OpGet, Key: key()}
		}
	}
	return in
}

// restOf is how long in asks a resource to rest.
func restOf(in Input) time.Duration {
	if in.Dur == 0 {
		return Rest
	}
	return in.Dur
}
