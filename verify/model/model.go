// Package model is the sequential specification of the crs scheduler that
// the linearizability checker (porcupine) and the model-based tests (rapid)
// hold the real scheduler to.
//
// It models the whole pool, not one key at a time: Acquire chooses among
// all keys, so the state cannot be partitioned. The state is a small
// fixed-size array (at most MaxKeys keys), a comparable value, so that
// porcupine can cache and compare states cheaply and every Step is pure.
//
// The model follows the scheduler's documented semantics (README error
// table, docs/ARCHITECTURE.md state model): per key it keeps whether the
// key is absent, live or draining (removed while held), whether it is
// excluded, its value (priority and capacity) and its holds (anonymous
// ones from Acquire, and leases). Active and held are not stored: they
// follow from the holds and the capacity, as in the scheduler.
//
// Budgets (config.Config.Limits) have a model of their own, BudgetSpec
// (budget.go), with its own resource type and calls.
package model

import (
	"cmp"
	"context"
	stderrors "errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

// MaxKeys bounds the key space. Histories use 3 to 6 keys so that
// operations collide; the bound keeps State a small comparable array.
const MaxKeys = 6

// Res is the resource type every check uses. Values are never changed
// after they are handed to the scheduler: Update passes a new *Res.
type Res struct {
	Key  string
	Prio int
	Cap  int
}

// KeyName is the scheduler key of key index i.
func KeyName(i int) string { return "k" + strconv.Itoa(i) }

// KeyIndex is the inverse of KeyName; -1 for a key it did not make.
func KeyIndex(key string) int {
	if !strings.HasPrefix(key, "k") {
		return -1
	}
	i, err := strconv.Atoi(key[1:])
	if err != nil || i < 0 || i >= MaxKeys {
		return -1
	}
	return i
}

// Compare is the comparator under test: lower priority first.
func Compare(a, b *Res) int { return cmp.Compare(a.Prio, b.Prio) }

// Key is the KeyFunc under test.
func Key(r *Res) string { return r.Key }

// Capacity is the Capacity function under test.
func Capacity(r *Res) int { return r.Cap }

// Kind is an operation of the scheduler's API.
type Kind uint8

const (
	OpAdd Kind = iota
	OpBatchAdd
	OpAcquire
	OpAcquireCtx // AcquireContext with an already cancelled context
	OpLease      // Lease with an already cancelled context
	OpRelease
	OpLeaseRelease      // Release of a lease the caller holds
	OpLeaseCooldown     // Cooldown of a lease the caller holds: release and suspend
	OpLeaseFail         // Fail of a lease the caller holds (no ejection configured)
	OpStaleLeaseRelease // Release through a copy of a lease already released
	OpSuspend           // Suspend for Dur (Rest if 0)
	OpUpdate
	OpExclude
	OpInclude
	OpRemove
	OpGet
	OpLen
	OpStats
	OpAdvance // move the clock by Dur: suspensions whose deadline comes end
	// OpStep and OpExpire are an Advance as a concurrent history records
	// it: the step of the clock, then one OpExpire per key, for the
	// timer's callbacks, which end the rests that came due one at a time
	// while other calls run, before the Advance returns.
	OpStep   // move the clock by Dur; the rests that come due still run
	OpExpire // end key Key's rest if it has come due
	numKinds
)

var kindNames = [...]string{
	OpAdd: "Add", OpBatchAdd: "BatchAdd", OpAcquire: "Acquire", OpAcquireCtx: "AcquireContext",
	OpLease: "Lease", OpRelease: "Release", OpLeaseRelease: "Lease.Release",
	OpLeaseCooldown: "Lease.Cooldown", OpLeaseFail: "Lease.Fail",
	OpStaleLeaseRelease: "staleLease.Release", OpSuspend: "Suspend", OpUpdate: "Update", OpExclude: "Exclude",
	OpInclude: "Include", OpRemove: "Remove", OpGet: "Get", OpLen: "Len", OpStats: "Stats",
	OpAdvance: "Advance", OpStep: "Advance.step", OpExpire: "timer",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Item is one resource of an Add, BatchAdd or Update.
type Item struct{ Key, Prio, Cap int }

// Res builds the resource the scheduler is given for it.
func (it Item) Res() *Res { return &Res{Key: KeyName(it.Key), Prio: it.Prio, Cap: it.Cap} }

// Input is one call. Key, Prio and Cap are used by the keyed operations
// (Add and Update use all three); Batch by BatchAdd; Slot picks which of
// the caller's leases Lease.Release ends (the model only needs its Key);
// Bad makes Suspend pass a duration of 0.
type Input struct {
	Kind  Kind
	Key   int
	Prio  int
	Cap   int
	Batch []Item
	Slot  int
	Bad   bool
	// Dur is how long Suspend and Lease.Cooldown rest the resource (0:
	// Rest), and how far Advance moves the clock.
	Dur time.Duration
}

func (in Input) String() string {
	switch in.Kind {
	case OpAdd, OpUpdate:
		return fmt.Sprintf("%v(k%d p=%d c=%d)", in.Kind, in.Key, in.Prio, in.Cap)
	case OpBatchAdd:
		parts := make([]string, len(in.Batch))
		for i, it := range in.Batch {
			parts[i] = fmt.Sprintf("k%d p=%d c=%d", it.Key, it.Prio, it.Cap)
		}
		return "BatchAdd[" + strings.Join(parts, ", ") + "]"
	case OpSuspend:
		if in.Bad {
			return fmt.Sprintf("Suspend(k%d, 0)", in.Key)
		}
		return fmt.Sprintf("Suspend(k%d, %v)", in.Key, restOf(in))
	case OpAdvance, OpStep:
		return fmt.Sprintf("%v(%v)", in.Kind, in.Dur)
	case OpLeaseCooldown:
		return fmt.Sprintf("%v(k%d, %v)", in.Kind, in.Key, restOf(in))
	case OpRelease, OpExclude, OpInclude, OpRemove, OpGet, OpLeaseRelease, OpLeaseFail, OpStaleLeaseRelease, OpExpire:
		return fmt.Sprintf("%v(k%d)", in.Kind, in.Key)
	}
	return in.Kind.String() + "()"
}

// Err classifies an operation's error by the sentinel it wraps.
type Err uint8

const (
	OK Err = iota
	ErrDuplicate
	ErrDuplicateDraining // ErrDuplicateKey wrapping ErrResourceDraining too
	ErrNotFound
	ErrNotExclusive
	ErrNotInactive
	ErrNotActive
	ErrNotHeld
	ErrLeased
	ErrNotExcluded
	ErrNoResource
	ErrCanceled
	ErrLeaseReleased
	ErrInvalidDuration
	ErrPanic // the call panicked (only broken variants and injected panics)
	ErrOther // anything else: never allowed by the model
)

var errNames = [...]string{
	OK: "ok", ErrDuplicate: "ErrDuplicateKey", ErrDuplicateDraining: "ErrDuplicateKey+ErrResourceDraining",
	ErrNotFound: "ErrResourceNotFound", ErrNotExclusive: "ErrNotExclusive",
	ErrNotInactive: "ErrResourceNotInactive", ErrNotActive: "ErrResourceNotActive",
	ErrNotHeld: "ErrResourceNotHeld", ErrLeased: "ErrResourceLeased",
	ErrNotExcluded: "ErrResourceNotExcluded", ErrNoResource: "ErrNoResourceAvailable",
	ErrCanceled: "context.Canceled", ErrLeaseReleased: "ErrLeaseReleased", ErrInvalidDuration: "ErrInvalidDuration",
	ErrPanic: "panic", ErrOther: "unexpected error",
}

func (e Err) String() string {
	if int(e) < len(errNames) {
		return errNames[e]
	}
	return "Err(" + strconv.Itoa(int(e)) + ")"
}

// Classify maps an error to its class. ErrResourceDraining is tested
// before ErrDuplicateKey, since a draining duplicate wraps both.
func Classify(err error) Err {
	checks := []struct {
		sentinel error
		class    Err
	}{
		{crserrors.ErrResourceDraining, ErrDuplicateDraining},
		{crserrors.ErrDuplicateKey, ErrDuplicate},
		{crserrors.ErrResourceNotFound, ErrNotFound},
		{crserrors.ErrNotExclusive, ErrNotExclusive},
		{crserrors.ErrResourceNotInactive, ErrNotInactive},
		{crserrors.ErrResourceNotActive, ErrNotActive},
		{crserrors.ErrResourceNotHeld, ErrNotHeld},
		{crserrors.ErrResourceLeased, ErrLeased},
		{crserrors.ErrResourceNotExcluded, ErrNotExcluded},
		{crserrors.ErrNoResourceAvailable, ErrNoResource},
		{context.Canceled, ErrCanceled},
		{crserrors.ErrLeaseReleased, ErrLeaseReleased},
		{crserrors.ErrInvalidDuration, ErrInvalidDuration},
	}
	if err == nil {
		return OK
	}
	for _, c := range checks {
		if stderrors.Is(err, c.sentinel) {
			return c.class
		}
	}
	return ErrOther
}

// Counts is what Stats reports per state, summed over the shards.
type Counts struct{ Active, Held, Excluded, Suspended, Draining, Holders int }

// Output is what a call returned. Key, Prio and Cap describe the resource
// returned by Acquire, AcquireContext, Lease and Get (Key is -1 for none);
// N is Len's result and Counts Stats'.
type Output struct {
	Err    Err
	Key    int
	Prio   int
	Cap    int
	N      int
	Counts Counts
	Detail string // the error text for ErrOther and ErrPanic
}

func (o Output) describe(k Kind) string {
	if o.Err != OK {
		if o.Detail != "" {
			return fmt.Sprintf("%v (%s)", o.Err, o.Detail)
		}
		return o.Err.String()
	}
	switch k {
	case OpAcquire, OpAcquireCtx, OpLease:
		return fmt.Sprintf("k%d p=%d c=%d", o.Key, o.Prio, o.Cap)
	case OpGet:
		return fmt.Sprintf("p=%d c=%d", o.Prio, o.Cap)
	case OpLen:
		return strconv.Itoa(o.N)
	case OpStats:
		return fmt.Sprintf("%+v", o.Counts)
	}
	return "ok"
}

// Status is a key's place in the lifecycle.
type Status uint8

const (
	Absent   Status = iota
	Live            // added and not removed: active, held or excluded
	Draining        // removed while held; leaves with its last hold
)

// Entry is the model of one key. Excluded and Suspended are the
// operator's and the health rules' marks; which state the scheduler shows
// follows from them, the holds and the capacity, in this order of
// precedence: excluded, resting (suspended), held (full), active.
type Entry struct {
	Status    Status
	Excluded  bool
	Suspended bool // until RestUntil, or until Include or Exclude end it
	// RestUntil is when the suspension ends (0 when not suspended;
	// Never: only Include or Exclude end it).
	RestUntil int64
	Prio      int32
	Cap       int32 // as given; the scheduler treats values below 1 as 1
	Anon      int32 // holds taken by Acquire/AcquireContext (Exclusive)
	Leases    int32 // leases outstanding
}

// Holders is the number of holds on the key.
func (e Entry) Holders() int32 { return e.Anon + e.Leases }

// State is the whole pool: one entry per key index.
type State struct {
	Keys [MaxKeys]Entry
	// Now is the scheduler's clock, in nanoseconds since New: moved only
	// by Advance, and kept below Never as the scheduler keeps it.
	Now int64
}

// Never is the deadline past the clock's range: a rest until Never lasts
// until Include or Exclude ends it.
const Never = math.MaxInt64

// after is now + d, saturated at Never, as the scheduler computes a
// deadline.
func after(now int64, d time.Duration) int64 {
	if int64(d) >= Never-now {
		return Never
	}
	return now + int64(d)
}

// suspend marks e suspended until d from now, unless its suspension
// ends later already.
func suspend(e *Entry, now int64, d time.Duration) {
	if d == 0 {
		d = Rest
	}
	e.Suspended, e.RestUntil = true, max(e.RestUntil, after(now, d))
}

// expire ends e's suspension if its deadline has come by now.
func expire(e *Entry, now int64) {
	if e.Suspended && e.RestUntil <= now {
		e.Suspended, e.RestUntil = false, 0
	}
}

// Exactness is how closely the model fixes Acquire's choice.
type Exactness uint8

const (
	// AnyActive: any active resource. ShardOrder with several shards
	// returns the best of the shard its strategy picks.
	AnyActive Exactness = iota
	// BestPriority: a resource of the lowest priority among the active
	// ones. GlobalOrder with several shards compares the shards' tops by
	// the comparator alone.
	BestPriority
	// Best: the lowest priority, then the fewest holders (ties among
	// equals are free): one shard's heap order.
	Best
)

// Spec is the model for one scheduler configuration.
type Spec struct {
	// Exclusive is the AcquirePolicy: under Shared only leases hold, and
	// nothing is ever full.
	Exclusive bool
	// Order is how good a resource Acquire must return.
	Order Exactness
	// Keys is the size of the key space (at most MaxKeys).
	Keys int
}

func capOf(e Entry) int32 { return max(e.Cap, 1) }

func (sp Spec) full(e Entry) bool { return sp.Exclusive && e.Holders() >= capOf(e) }

// Active reports whether key entry e can be acquired.
func (sp Spec) Active(e Entry) bool {
	return e.Status == Live && !e.Excluded && !e.Suspended && !sp.full(e)
}

// Held reports whether every slot of e is taken and nothing else keeps it
// off the heap (Exclusive only).
func (sp Spec) Held(e Entry) bool {
	return e.Status == Live && !e.Excluded && !e.Suspended && sp.full(e)
}

// Resting reports whether e is suspended and not excluded.
func (sp Spec) Resting(e Entry) bool { return e.Status == Live && !e.Excluded && e.Suspended }

// StateName names e's state as the scheduler's StateOf does.
func (sp Spec) StateName(e Entry) string {
	switch {
	case e.Status == Absent:
		return "absent"
	case e.Status == Draining:
		return "draining"
	case e.Excluded:
		return "excluded"
	case e.Suspended:
		return "resting"
	case sp.full(e):
		return "held"
	}
	return "active"
}

// Counts is what Stats must report in state s.
func (sp Spec) Counts(s State) Counts {
	var c Counts
	for _, e := range s.Keys {
		switch {
		case e.Status == Absent:
			continue
		case e.Status == Draining:
			c.Draining++
		case e.Excluded:
			c.Excluded++
		case e.Suspended:
			c.Suspended++
		case sp.full(e):
			c.Held++
		default:
			c.Active++
		}
		c.Holders += int(e.Holders())
	}
	return c
}

// Len is what Len must report in state s.
func (sp Spec) Len(s State) int {
	n := 0
	for _, e := range s.Keys {
		if e.Status == Live {
			n++
		}
	}
	return n
}

// FreeSlots is how many Acquire calls in a row succeed under Exclusive.
func (sp Spec) FreeSlots(s State) int {
	n := 0
	for _, e := range s.Keys {
		if e.Status == Live && !e.Excluded && !e.Suspended && sp.Exclusive {
			n += int(max(capOf(e)-e.Holders(), 0))
		}
	}
	return n
}

// best reports whether active key k may be returned by Acquire in s.
func (sp Spec) best(s State, k int) bool {
	if sp.Order == AnyActive {
		return true
	}
	e := s.Keys[k]
	for j, o := range s.Keys {
		if j == k || !sp.Active(o) {
			continue
		}
		if o.Prio < e.Prio || (sp.Order == Best && o.Prio == e.Prio && o.Holders() < e.Holders()) {
			return false
		}
	}
	return true
}

// Candidates lists the keys Acquire may return in s.
func (sp Spec) Candidates(s State) []int {
	var ks []int
	for k := range s.Keys {
		if sp.Active(s.Keys[k]) && sp.best(s, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// afterUnhold drops a draining key whose last hold ended.
func afterUnhold(e Entry) Entry {
	if e.Status == Draining && e.Holders() == 0 {
		return Entry{}
	}
	return e
}

// Step is the model's transition function: whether a call with input in
// may return out in state s, and the state after it. It never changes s
// (porcupine requires a pure Step).
func (sp Spec) Step(s State, in Input, out Output) (bool, State) {
	if in.Kind == OpAcquire || in.Kind == OpAcquireCtx || in.Kind == OpLease {
		return sp.stepTake(s, in, out)
	}
	switch in.Kind {
	case OpLeaseRelease, OpLeaseCooldown, OpLeaseFail:
		// The caller ends a lease it holds, exactly once: it always
		// succeeds (leases here have no deadline). Fail only counts a
		// failure, which without Ejection changes nothing else; Cooldown
		// suspends the resource in the same step unless it drains.
		e := s.Keys[in.Key]
		if e.Status == Absent || e.Leases == 0 || out.Err != OK {
			return false, s
		}
		e.Leases--
		if in.Kind == OpLeaseCooldown && e.Status == Live {
			suspend(&e, s.Now, in.Dur)
		}
		s.Keys[in.Key] = afterUnhold(e)
		return true, s
	}
	want, next := sp.Expect(s, in)
	if out.Err != want.Err {
		return false, s
	}
	if want.Err == OK {
		switch in.Kind {
		case OpGet:
			if out.Prio != want.Prio || out.Cap != want.Cap {
				return false, s
			}
		case OpLen:
			if out.N != want.N {
				return false, s
			}
		case OpStats:
			if out.Counts != want.Counts {
				return false, s
			}
		}
	}
	return true, next
}

// stepTake is Step for Acquire, AcquireContext and Lease, the operations
// whose result the model does not fix: any of the candidates will do.
func (sp Spec) stepTake(s State, in Input, out Output) (bool, State) {
	none := ErrNoResource
	if in.Kind != OpAcquire {
		none = ErrCanceled // a cancelled context fails only when it would wait
	}
	switch out.Err {
	case none:
		return len(sp.Candidates(s)) == 0, s
	case OK:
	default:
		return false, s
	}
	k := out.Key
	if k < 0 || k >= len(s.Keys) || !sp.Active(s.Keys[k]) || !sp.best(s, k) {
		return false, s
	}
	e := s.Keys[k]
	if int(e.Prio) != out.Prio || int(e.Cap) != out.Cap {
		return false, s // a stale or foreign value
	}
	switch {
	case in.Kind == OpLease:
		e.Leases++
	case sp.Exclusive:
		e.Anon++
	}
	s.Keys[k] = e
	return true, s
}

// Expect is the result the model requires of a call whose result is
// determined (every kind but Acquire, AcquireContext, Lease and
// Lease.Release), and the state after it.
func (sp Spec) Expect(s State, in Input) (Output, State) {
	out := Output{Key: -1}
	fail := func(e Err) (Output, State) { out.Err = e; return out, s }
	switch in.Kind {
	case OpAdd:
		switch s.Keys[in.Key].Status {
		case Live:
			return fail(ErrDuplicate)
		case Draining:
			return fail(ErrDuplicateDraining)
		}
		s.Keys[in.Key] = Entry{Status: Live, Prio: int32(in.Prio), Cap: int32(in.Cap)}
		return out, s
	case OpBatchAdd:
		var seen [MaxKeys]bool
		for _, it := range in.Batch {
			if seen[it.Key] {
				return fail(ErrDuplicate)
			}
			seen[it.Key] = true
		}
		for _, it := range in.Batch {
			switch s.Keys[it.Key].Status {
			case Live:
				return fail(ErrDuplicate)
			case Draining:
				return fail(ErrDuplicateDraining)
			}
		}
		for _, it := range in.Batch {
			s.Keys[it.Key] = Entry{Status: Live, Prio: int32(it.Prio), Cap: int32(it.Cap)}
		}
		return out, s
	case OpStaleLeaseRelease:
		return fail(ErrLeaseReleased)
	case OpLen:
		out.N = sp.Len(s)
		return out, s
	case OpStats:
		out.Counts = sp.Counts(s)
		return out, s
	case OpAdvance, OpStep:
		// The scheduler's timer ends the suspensions that come due, in
		// the call (the checks' clock fires its timers there); a
		// concurrent history records their ends apart, as OpExpire.
		s.Now = min(after(s.Now, in.Dur), Never-1)
		if in.Kind == OpAdvance {
			for k := range s.Keys {
				expire(&s.Keys[k], s.Now)
			}
		}
		return out, s
	case OpExpire:
		expire(&s.Keys[in.Key], s.Now)
		return out, s
	case OpSuspend:
		if in.Bad {
			return fail(ErrInvalidDuration) // refused before the key is looked up
		}
	case OpRelease:
		if !sp.Exclusive {
			return fail(ErrNotExclusive) // refused before the key is looked up
		}
		e := s.Keys[in.Key]
		switch {
		case e.Status == Absent:
			return fail(ErrNotFound)
		case e.Anon > 0: // a draining key is released too: that is how it leaves
			e.Anon--
			s.Keys[in.Key] = afterUnhold(e)
			return out, s
		case e.Holders() > 0:
			return fail(ErrLeased)
		case sp.Active(e):
			return fail(ErrNotInactive)
		}
		return fail(ErrNotHeld)
	}

	// The rest find only live keys: a draining key is not found.
	e := s.Keys[in.Key]
	if e.Status != Live {
		return fail(ErrNotFound)
	}
	switch in.Kind {
	case OpGet:
		out.Prio, out.Cap = int(e.Prio), int(e.Cap)
		return out, s
	case OpUpdate:
		e.Prio, e.Cap = int32(in.Prio), int32(in.Cap)
	case OpExclude:
		// From active or resting; excluding ends the suspension.
		if !sp.Active(e) && !sp.Resting(e) {
			return fail(ErrNotActive)
		}
		e.Excluded, e.Suspended, e.RestUntil = true, false, 0
	case OpInclude:
		// Of an excluded or suspended resource; ends both.
		switch {
		case sp.Active(e):
			return fail(ErrNotInactive)
		case sp.Held(e):
			return fail(ErrNotExcluded)
		}
		e.Excluded, e.Suspended, e.RestUntil = false, false, 0
	case OpSuspend:
		suspend(&e, s.Now, in.Dur)
	case OpRemove:
		if e.Holders() > 0 {
			e.Status, e.Excluded, e.Suspended, e.RestUntil = Draining, false, false, 0
		} else {
			e = Entry{}
		}
	default:
		panic(fmt.Sprintf("model: no rule for %v", in.Kind))
	}
	s.Keys[in.Key] = e
	return out, s
}

// Allowed describes the results the model allows for in in state s, for
// failure messages.
func (sp Spec) Allowed(s State, in Input) string {
	switch in.Kind {
	case OpAcquire, OpAcquireCtx, OpLease:
		c := sp.Candidates(s)
		if len(c) == 0 {
			if in.Kind == OpAcquire {
				return ErrNoResource.String()
			}
			return ErrCanceled.String()
		}
		parts := make([]string, len(c))
		for i, k := range c {
			parts[i] = fmt.Sprintf("k%d p=%d c=%d", k, s.Keys[k].Prio, s.Keys[k].Cap)
		}
		return "one of " + strings.Join(parts, " | ")
	case OpLeaseRelease, OpLeaseCooldown, OpLeaseFail:
		if s.Keys[in.Key].Leases == 0 {
			return "nothing: the model has no lease on that key"
		}
		return "ok"
	}
	want, _ := sp.Expect(s, in)
	return want.describe(in.Kind)
}

// Describe renders a call and its result.
func Describe(in Input, out Output) string {
	return fmt.Sprintf("%v -> %s", in, out.describe(in.Kind))
}

// DescribeState renders s, one key per line part.
func (sp Spec) DescribeState(s State) string {
	var parts []string
	for k, e := range s.Keys[:sp.keys()] {
		if e.Status == Absent {
			parts = append(parts, fmt.Sprintf("k%d absent", k))
			continue
		}
		mark := ""
		if e.Excluded && e.Suspended {
			mark = "+suspended"
		}
		parts = append(parts, fmt.Sprintf("k%d %s%s p=%d c=%d anon=%d leases=%d", k, sp.StateName(e), mark, e.Prio, e.Cap, e.Anon, e.Leases))
	}
	return strings.Join(parts, "; ")
}

func (sp Spec) keys() int {
	if sp.Keys <= 0 || sp.Keys > MaxKeys {
		return MaxKeys
	}
	return sp.Keys
}
