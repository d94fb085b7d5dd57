package scheduler_test

// The sequential model the fuzz target and the randomized panic tests
// hold the scheduler to. It is the standard-library twin of the model in
// verify/model (which the linearizability and rapid checks use and which
// documents each rule); the root module takes no third-party
// dependencies, so it cannot import that module. Keep the two in step.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	crserrors "github.com/crsched/crs/errors"
)

const genMaxKeys = 6

// genRes is the resource type of the generated tests. Values are never
// changed once handed to the scheduler: Update passes a new one.
type genRes struct {
	key  string
	prio int
	cap  int
}

func genKey(i int) string { return fmt.Sprintf("g%d", i) }

func genIndex(key string) int {
	var i int
	if _, err := fmt.Sscanf(key, "g%d", &i); err != nil || i < 0 || i >= genMaxKeys {
		return -1
	}
	return i
}

type genKind uint8

const (
	gAdd genKind = iota
	gBatchAdd
	gAcquire
	gAcquireCtx // AcquireContext with a cancelled context: never waits
	gLease      // Lease with a cancelled context
	gLeaseRelease
	gLeaseCooldown
	gStaleLease // release through a copy of a released lease
	gRelease
	gUpdate
	gExclude
	gInclude
	gSuspend
	gRemove
	gGet
	gAdvance // move the clock: rests end when their deadline comes
	gKinds
)

var genKindNames = [...]string{"Add", "BatchAdd", "Acquire", "AcquireContext", "Lease", "Lease.Release",
	"Lease.Cooldown", "staleLease.Release", "Release", "Update", "Exclude", "Include", "Suspend", "Remove", "Get", "Advance"}

func (k genKind) String() string { return genKindNames[k] }

type genItem struct{ key, prio, cap int }

// genNever is the scheduler's deadline that never comes (node.Never),
// where a deadline past the clock's range saturates.
const genNever = math.MaxInt64

// genDurations are what Suspend, Lease.Cooldown and Advance take: small,
// large, and so large that a deadline would overflow.
var genDurations = [...]time.Duration{time.Millisecond, time.Second, time.Hour,
	100 * 365 * 24 * time.Hour, math.MaxInt64}

// genAfter is now + d, saturated at genNever.
func genAfter(now int64, d time.Duration) int64 {
	if int64(d) >= genNever-now {
		return genNever
	}
	return now + int64(d)
}

type genOp struct {
	kind  genKind
	key   int
	prio  int
	cap   int
	batch []genItem
	slot  int
	dur   time.Duration // Suspend, Lease.Cooldown, Advance
}

func (o genOp) String() string {
	switch o.kind {
	case gAdd, gUpdate:
		return fmt.Sprintf("%v(g%d p=%d c=%d)", o.kind, o.key, o.prio, o.cap)
	case gBatchAdd:
		return fmt.Sprintf("BatchAdd%v", o.batch)
	case gAcquire, gAcquireCtx, gLease:
		return o.kind.String() + "()"
	case gAdvance:
		return fmt.Sprintf("Advance(%v)", o.dur)
	case gSuspend, gLeaseCooldown:
		return fmt.Sprintf("%v(g%d, %v)", o.kind, o.key, o.dur)
	}
	return fmt.Sprintf("%v(g%d)", o.kind, o.key)
}

// genOut is a call's result: the error's class and, for the calls that
// return a resource, which one and its value.
type genOut struct {
	err  string
	key  int
	prio int
	cap  int
}

func (o genOut) String() string {
	if o.err != "ok" || o.key < 0 {
		return o.err
	}
	return fmt.Sprintf("g%d p=%d c=%d", o.key, o.prio, o.cap)
}

// genClass names the sentinel err wraps. ErrResourceDraining comes before
// ErrDuplicateKey: a draining duplicate wraps both.
func genClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []error{
		crserrors.ErrResourceDraining, crserrors.ErrDuplicateKey, crserrors.ErrResourceNotFound,
		crserrors.ErrNotExclusive, crserrors.ErrResourceNotInactive, crserrors.ErrResourceNotActive,
		crserrors.ErrResourceNotHeld, crserrors.ErrResourceLeased, crserrors.ErrResourceNotExcluded,
		crserrors.ErrNoResourceAvailable, context.Canceled, crserrors.ErrLeaseReleased,
	} {
		if errors.Is(err, s) {
			return strings.TrimPrefix(s.Error(), "crs: ")
		}
	}
	return "unexpected: " + err.Error()
}

var (
	cDup      = genClass(crserrors.ErrDuplicateKey)
	cDraining = genClass(crserrors.ErrResourceDraining)
	cNotFound = genClass(crserrors.ErrResourceNotFound)
)

type genStatus uint8

const (
	gAbsent genStatus = iota
	gLive
	gDraining
)

// genEntry is one key. Excluded, then resting, then full decide the
// state the scheduler shows, in that order of precedence.
type genEntry struct {
	status   genStatus
	excluded bool
	// restUntil is when a suspension ends (0: none; genNever: at
	// Include or Exclude); it rests while the clock is before it.
	restUntil int64
	prio, cap int
	anon      int
	leases    int
}

func (e genEntry) holders() int { return e.anon + e.leases }

type genModel struct {
	now       int64 // the scheduler's clock since New, below genNever
	exclusive bool
	order     int // 0: any active resource; 1: best priority; 2: best priority, then fewest holders
	keys      int
	e         [genMaxKeys]genEntry
}

func (m *genModel) full(e genEntry) bool { return m.exclusive && e.holders() >= max(e.cap, 1) }

func (m *genModel) resting(e genEntry) bool { return e.restUntil != 0 && m.now < e.restUntil }

// suspend rests e until d from now, unless it rests longer already.
func (m *genModel) suspend(e *genEntry, d time.Duration) {
	e.restUntil = max(e.restUntil, genAfter(m.now, d))
}

func (m *genModel) active(e genEntry) bool {
	return e.status == gLive && !e.excluded && !m.resting(e) && !m.full(e)
}

func (m *genModel) held(e genEntry) bool {
	return e.status == gLive && !e.excluded && !m.resting(e) && m.full(e)
}

func (m *genModel) state(k int) string {
	e := m.e[k]
	switch {
	case e.status == gAbsent:
		return "absent"
	case e.status == gDraining:
		return "draining"
	case e.excluded:
		return "excluded"
	case m.resting(e):
		return "resting"
	case m.full(e):
		return "held"
	}
	return "active"
}

func (m *genModel) String() string {
	var parts []string
	for k := 0; k < m.keys; k++ {
		e := m.e[k]
		parts = append(parts, fmt.Sprintf("g%d %s p=%d c=%d anon=%d leases=%d", k, m.state(k), e.prio, e.cap, e.anon, e.leases))
	}
	return strings.Join(parts, "; ")
}

// candidates are the keys Acquire may return.
func (m *genModel) candidates() []int {
	var ks []int
	for k := 0; k < m.keys; k++ {
		e := m.e[k]
		if !m.active(e) {
			continue
		}
		best := true
		for j := 0; j < m.keys && m.order > 0; j++ {
			o := m.e[j]
			if j != k && m.active(o) && (o.prio < e.prio || (m.order == 2 && o.prio == e.prio && o.holders() < e.holders())) {
				best = false
			}
		}
		if best {
			ks = append(ks, k)
		}
	}
	return ks
}

func (m *genModel) afterUnhold(k int) {
	if e := m.e[k]; e.status == gDraining && e.holders() == 0 {
		m.e[k] = genEntry{}
	}
}

// step checks that the scheduler may return out for op, and applies op.
// It returns a description of what the model allows when it may not.
func (m *genModel) step(op genOp, out genOut) (ok bool, allowed string) {
	fail := func(class string) (bool, string) { return out.err == class, class }
	switch op.kind {
	case gAcquire, gAcquireCtx, gLease:
		c := m.candidates()
		none := genClass(crserrors.ErrNoResourceAvailable)
		if op.kind != gAcquire {
			none = genClass(context.Canceled)
		}
		if len(c) == 0 {
			return fail(none)
		}
		allowed = fmt.Sprintf("one of %v", c)
		k := out.key
		if out.err != "ok" || k < 0 || k >= m.keys {
			return false, allowed
		}
		if !slices.Contains(c, k) {
			return false, allowed
		}
		e := &m.e[k]
		if out.prio != e.prio || out.cap != e.cap {
			return false, fmt.Sprintf("value p=%d c=%d", e.prio, e.cap)
		}
		switch {
		case op.kind == gLease:
			e.leases++
		case m.exclusive:
			e.anon++
		}
		return true, ""
	case gLeaseRelease, gLeaseCooldown:
		e := &m.e[op.key]
		if out.err != "ok" || e.leases == 0 {
			return false, "ok"
		}
		e.leases--
		if op.kind == gLeaseCooldown && e.status == gLive {
			m.suspend(e, op.dur)
		}
		m.afterUnhold(op.key)
		return true, ""
	case gStaleLease:
		return fail(genClass(crserrors.ErrLeaseReleased))
	case gAdvance:
		m.now = min(genAfter(m.now, op.dur), genNever-1)
		return true, ""
	case gAdd:
		switch m.e[op.key].status {
		case gLive:
			return fail(cDup)
		case gDraining:
			return fail(cDraining)
		}
		if out.err == "ok" {
			m.e[op.key] = genEntry{status: gLive, prio: op.prio, cap: op.cap}
		}
		return out.err == "ok", "ok"
	case gBatchAdd:
		seen := map[int]bool{}
		for _, it := range op.batch {
			if seen[it.key] {
				return fail(cDup)
			}
			seen[it.key] = true
		}
		for _, it := range op.batch {
			switch m.e[it.key].status {
			case gLive:
				return fail(cDup)
			case gDraining:
				return fail(cDraining)
			}
		}
		if out.err != "ok" {
			return false, "ok"
		}
		for _, it := range op.batch {
			m.e[it.key] = genEntry{status: gLive, prio: it.prio, cap: it.cap}
		}
		return true, ""
	case gRelease:
		if !m.exclusive {
			return fail(genClass(crserrors.ErrNotExclusive))
		}
		e := &m.e[op.key]
		switch {
		case e.status == gAbsent:
			return fail(cNotFound)
		case e.anon > 0:
			if out.err != "ok" {
				return false, "ok"
			}
			e.anon--
			m.afterUnhold(op.key)
			return true, ""
		case e.holders() > 0:
			return fail(genClass(crserrors.ErrResourceLeased))
		case m.active(*e):
			return fail(genClass(crserrors.ErrResourceNotInactive))
		}
		return fail(genClass(crserrors.ErrResourceNotHeld))
	}
	e := &m.e[op.key]
	if e.status != gLive {
		return fail(cNotFound)
	}
	var want string
	switch op.kind {
	case gGet:
		if out.err == "ok" && (out.prio != e.prio || out.cap != e.cap) {
			return false, fmt.Sprintf("p=%d c=%d", e.prio, e.cap)
		}
		return fail("ok")
	case gUpdate:
		if ok, want = fail("ok"); ok {
			e.prio, e.cap = op.prio, op.cap
		}
	case gExclude:
		if !m.active(*e) && !(!e.excluded && m.resting(*e)) {
			return fail(genClass(crserrors.ErrResourceNotActive))
		}
		if ok, want = fail("ok"); ok {
			e.excluded, e.restUntil = true, 0
		}
	case gInclude:
		switch {
		case m.active(*e):
			return fail(genClass(crserrors.ErrResourceNotInactive))
		case m.held(*e):
			return fail(genClass(crserrors.ErrResourceNotExcluded))
		}
		if ok, want = fail("ok"); ok {
			e.excluded, e.restUntil = false, 0
		}
	case gSuspend:
		if ok, want = fail("ok"); ok {
			m.suspend(e, op.dur)
		}
	case gRemove:
		if ok, want = fail("ok"); ok {
			if e.holders() > 0 {
				e.status, e.excluded, e.restUntil = gDraining, false, 0
			} else {
				*e = genEntry{}
			}
		}
	default:
		panic(fmt.Sprintf("model: no rule for %v", op.kind))
	}
	return ok, want
}

// counts is what Stats must report.
func (m *genModel) counts() (active, held, excluded, suspended, draining, holders, total int) {
	for k := 0; k < m.keys; k++ {
		e := m.e[k]
		switch m.state(k) {
		case "absent":
			continue
		case "active":
			active++
		case "held":
			held++
		case "excluded":
			excluded++
		case "resting":
			suspended++
		case "draining":
			draining++
		}
		if e.status == gLive {
			total++
		}
		holders += e.holders()
	}
	return
}
