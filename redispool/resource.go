package redispool

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// Resource describes one resource of the pool. The pool stores only
// these fields; what the ID stands for (an API key, a proxy, a GPU) is
// the application's.
type Resource struct {
	// ID identifies the resource in the pool; required. It is any
	// non-empty byte string: the pool's keys and scripts are binary
	// safe.
	ID string
	// Priority orders resources: the lowest value is handed out first.
	// Among equal priorities the resource with the most budget left
	// (Limits: its tightest bucket full again first; one without limits
	// counts as full) goes first, then the one with fewer holders, then
	// the smaller ID. It must be finite.
	Priority float64
	// Capacity is how many leases the resource takes at once; below 1
	// means 1, at most MaxCapacity.
	Capacity int
	// Limits are the resource's budgets, token buckets kept in the pool
	// and changed by the server in the same step as the grant they pay
	// for (see WithCost and the package documentation). They must be
	// valid for the core (config.ValidateLimits) and within what the
	// scripts keep exactly (see MaxLimitMax); otherwise Add and Sync return
	// ErrInvalidLimit or ErrDuplicateLimit, or ErrLimitTooLarge, and
	// change nothing. nil means no budget. A bucket of a limit with
	// Admission that a grant takes from full refills only from the next
	// answer on the resource (Lease.Settle, Observe or Learn, in any
	// process of the pool), as in the core.
	Limits []config.Limit
}

// MaxLimitMax is the largest Limit.Max of a resource's limit. The
// scripts count in Lua's doubles, exact for integers below 2^53: they
// keep a bucket as whole units and a remainder below its Per (in
// milliseconds, rounded up), and work a refill out a Per at a time, so
// units, debts and a Per's refill must sum to less than 2^53, and Per
// times (the smaller of Max and Per, plus 2) must be at most 2^53. Any
// Max up to MaxLimitMax may then go with a Per up to 26 hours (94906264
// ms); a longer Per takes a Max up to 2^53 / Per - 2 (a week: 14892853).
const MaxLimitMax = 1 << 51

// limitExact reports whether the scripts keep a bucket of max units per
// per ms exactly (see MaxLimitMax).
func limitExact(max, per int64) bool {
	return max <= MaxLimitMax && min(max, per)+2 <= (1<<53)/per
}

func checkID(id string) error {
	if id == "" {
		return ErrInvalidID
	}
	return nil
}

func formatPriority(p float64) (string, error) {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "", fmt.Errorf("%w: %v", ErrInvalidPriority, p)
	}
	// Shortest text that parses back to p exactly; Redis and Lua read it
	// with strtod.
	return strconv.FormatFloat(p, 'g', -1, 64), nil
}

// Add puts r in the pool, available at once, its buckets full: its
// slots go to the oldest waiters, if there are any. It returns
// ErrDuplicateKey if the pool has r.ID, also wrapping
// ErrResourceDraining if that resource was removed while leased and
// still has leases (the ID is free once they end); an existing resource
// is left as it is, its buckets included (Sync changes them).
func (p *Pool) Add(ctx context.Context, r Resource) error {
	prio, capacity, limits, err := r.check()
	if err != nil {
		return fmt.Errorf("redispool: add: %w", err)
	}
	if _, _, err := p.run(ctx, scriptAdd, newRequest(), r.ID, prio, capacity, limits); err != nil {
		return fmt.Errorf("redispool: add %q: %w", r.ID, err)
	}
	return nil
}

// check validates r and returns its priority, capacity and limits as
// the scripts take them.
func (r Resource) check() (prio string, capacity int, limits string, err error) {
	if err := checkID(r.ID); err != nil {
		return "", 0, "", err
	}
	if prio, err = formatPriority(r.Priority); err != nil {
		return "", 0, "", fmt.Errorf("%q: %w", r.ID, err)
	}
	capacity = max(r.Capacity, 1)
	if capacity > MaxCapacity {
		return "", 0, "", fmt.Errorf("%q: %w: %d", r.ID, ErrInvalidCapacity, r.Capacity)
	}
	if limits, err = formatLimits(r.Limits); err != nil {
		return "", 0, "", fmt.Errorf("%q: %w", r.ID, err)
	}
	return prio, capacity, limits, nil
}

// formatLimits checks limits and writes them as the scripts read them
// (parse_limits in lua/lifecycle.lua): "NAME,MAX,PER[/a];..." with NAME
// in hex (any byte string is a name), PER in whole milliseconds, rounded
// up so that the rate is never above the limit's, and /a for a limit
// counted at admission (config.Limit.Admission). A limit without
// Admission is written as before the flag existed, so that a pool
// without it reads the same to every version.
func formatLimits(limits []config.Limit) (string, error) {
	if err := config.ValidateLimits(limits); err != nil {
		return "", err
	}
	var b strings.Builder
	for i, l := range limits {
		per := millis(l.Per)
		if !limitExact(l.Max, per) {
			return "", fmt.Errorf("%w: %q has Max %d per %v (see MaxLimitMax)", ErrLimitTooLarge, l.Name, l.Max, l.Per)
		}
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, "%x,%d,%d", l.Name, l.Max, per)
		if l.Admission {
			b.WriteString("/a")
		}
	}
	return b.String(), nil
}

// formatCost writes cost as the scripts read it (parse_cost in
// lua/bucket.lua): "NAME=AMOUNT,..." with NAME in hex, sorted.
func formatCost(cost config.Cost) string {
	names := make([]string, 0, len(cost))
	for name := range cost {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%x=%d", name, cost[name])
	}
	return b.String()
}

// Sync makes the pool's resources exactly rs, in one step on the server:
// it adds those that are missing, sets the priority, capacity and limits
// of those that differ, and removes the others (a resource with leases
// drains, as with Remove; one that was draining and is in rs is back,
// its leases running on). Exclusions and suspensions, which are not
// configuration, are left as they are. Changed limits keep their
// buckets' levels, as the core's Update does: a bucket whose name stays
// keeps its level, cut to its new Max (and to a whole unit if its Per
// changes), so a larger Max is reached by refilling, not granted at
// once; a new name starts full; a dropped one goes. Leases running on
// the resource keep what they paid, and Settle corrects the buckets
// that kept their names. Sync is idempotent, and any
// number of processes may call it at once (each call is atomic, so they
// converge on the last one's rs): every replica of a service can Sync
// its configured resources at start and on a timer, which also restores
// a pool lost with the server's data (see ErrPoolEmpty). A Sync that
// changes something takes time on the server in proportion to the
// pool's resources and rs; one of the resources that the last Sync
// gave, when nothing has changed them since, sends their digest alone
// and changes nothing.
//
// An invalid resource (the errors of Add) or an ID that appears twice
// (ErrDuplicateKey) is refused before anything is sent. An empty rs
// removes every resource.
func (p *Pool) Sync(ctx context.Context, rs []Resource) error {
	args, err := syncArgs(rs)
	if err != nil {
		return fmt.Errorf("redispool: sync: %w", err)
	}
	status, _, err := p.run(ctx, scriptSynced, "", args[0])
	if err != nil {
		return fmt.Errorf("redispool: sync: %w", err)
	}
	if status == statusOK {
		return nil
	}
	if _, _, err := p.run(ctx, scriptSync, newRequest(), args...); err != nil {
		return fmt.Errorf("redispool: sync: %w", err)
	}
	return nil
}

// syncArgs checks rs and returns the arguments of the sync script: the
// digest of rs, then rs as quadruples, by ID.
func syncArgs(rs []Resource) ([]any, error) {
	// By ID, so that processes that list the same resources in other
	// orders send the same digest.
	rs = slices.SortedFunc(slices.Values(rs), func(a, b Resource) int { return strings.Compare(a.ID, b.ID) })
	args := make([]any, 1, 1+4*len(rs))
	digest := sha1.New()
	for i, r := range rs {
		prio, capacity, limits, err := r.check()
		if err != nil {
			return nil, err
		}
		if i > 0 && rs[i-1].ID == r.ID {
			return nil, fmt.Errorf("%q twice: %w", r.ID, crserrors.ErrDuplicateKey)
		}
		args = append(args, r.ID, prio, capacity, limits)
		for _, field := range []string{r.ID, prio, strconv.Itoa(capacity), limits} {
			fmt.Fprintf(digest, "%d:%s,", len(field), field)
		}
	}
	args[0] = hex.EncodeToString(digest.Sum(nil))
	return args, nil
}

// Update sets the priority of resource id. Its leases are unaffected.
func (p *Pool) Update(ctx context.Context, id string, priority float64) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("redispool: update: %w", err)
	}
	prio, err := formatPriority(priority)
	if err != nil {
		return fmt.Errorf("redispool: update %q: %w", id, err)
	}
	return p.idOp(ctx, "update", scriptUpdate, id, prio)
}

// Remove deletes resource id, in any state. A resource with leases
// drains: every operation but the end of those leases treats it as gone,
// its ID cannot be added again until they end, and it leaves with the
// last one. When the last resource leaves, no key of the pool remains
// but the last fencing token (and the records of recent writes, which
// expire by themselves).
func (p *Pool) Remove(ctx context.Context, id string) error {
	return p.idOp(ctx, "remove", scriptRemove, id)
}

// Exclude takes resource id out of the pool until Include. Its leases
// run on and end as usual; it is not handed out again meanwhile. (The
// core's Exclude refuses a resource whose every slot is held; across
// processes an operator must be able to pull a revoked key at once, so
// here any resource not already excluded can be.) It ends a suspension,
// which Include would end anyway. ErrResourceNotActive: already
// excluded.
func (p *Pool) Exclude(ctx context.Context, id string) error {
	return p.idOp(ctx, "exclude", scriptExclude, id)
}

// Include puts an excluded, suspended or ejected resource back: its free
// slots go to the oldest waiters, if there are any. If it is none of
// these, Include returns the core's errors: ErrResourceNotInactive when
// it is idle and listed, ErrResourceNotExcluded when it has a lease or
// rests only for its buckets (which no one may refill early).
func (p *Pool) Include(ctx context.Context, id string) error {
	return p.idOp(ctx, "include", scriptInclude, id)
}

// Suspend makes resource id unavailable until d from now (by the Redis
// server's clock), or until the end of a suspension it already has if
// that is later. Its leases run on: for a leased resource the suspension
// takes effect as its leases end, none being handed out meanwhile. It
// ends by itself, or with Include. ErrInvalidDuration: d <= 0;
// ErrResourceNotActive: the resource is excluded (Include ends both, so
// the suspension would mean nothing).
func (p *Pool) Suspend(ctx context.Context, id string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("redispool: suspend %q for %v: %w", id, d, crserrors.ErrInvalidDuration)
	}
	return p.idOp(ctx, "suspend", scriptSuspend, id, millis(d))
}

// Remaining returns the units left now in each budget (Resource.Limits)
// of resource id, by limit name, by the server's clock: negative for a
// bucket in debt, empty for a resource without limits, as the core's
// Scheduler.Remaining. ErrResourceNotFound: the pool has no resource id
// (or it drains).
func (p *Pool) Remaining(ctx context.Context, id string) (map[string]int64, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("redispool: remaining: %w", err)
	}
	_, r, err := p.run(ctx, scriptRemain, "", id)
	if err != nil {
		return nil, fmt.Errorf("redispool: remaining %q: %w", id, err)
	}
	out := make(map[string]int64, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		h, _ := r[i].(string)
		name, err := hex.DecodeString(h)
		n, ok := r[i+1].(int64)
		if err != nil || !ok {
			return nil, fmt.Errorf("redispool: remaining %q: unexpected reply %v", id, r)
		}
		out[string(name)] = n
	}
	return out, nil
}

// idOp runs a script that acts on one existing resource.
func (p *Pool) idOp(ctx context.Context, op string, s script, id string, args ...any) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("redispool: %s: %w", op, err)
	}
	if _, _, err := p.run(ctx, s, newRequest(), append([]any{id}, args...)...); err != nil {
		return fmt.Errorf("redispool: %s %q: %w", op, id, err)
	}
	return nil
}
