package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"
)

// pool is what the engine drives: the crs scheduler, the baseline that
// -compare measures it against, or an Extension's Pool. H is the pool's
// handle for one acquisition. Each worker keeps one H for all its requests
// and passes its address: a handle passed by address through an interface
// escapes, and one per request would be garbage the GC must chase, at
// 40,000 requests a second enough to start a cycle every few seconds (it
// did, and its stack scans of ten thousand goroutines showed up as acquire
// latency).
type pool[H any] interface {
	// acquire waits for a resource until ctx ends, fills in h and returns
	// the resource's index in [0, Resources).
	acquire(ctx context.Context, h *H) (int, error)
	// end releases the acquisition exactly once. failed says the backend
	// call failed; the pool then applies its failure handling (a failure
	// report, a suspension, if configured). Every release starts the
	// configured cooldown.
	end(h *H, failed bool) error
	// finish runs once the workers have stopped: it ends every rest still
	// pending (cooldown, suspension, ejection), so that state sees every
	// resource back, and makes state final.
	finish()
	// state reads the pool's own view, for the accounting check.
	state() PoolState
	// close releases what the pool still holds, after state.
	close()
}

// PoolState is a pool's view of itself at the end of a run, which the
// accounting checks against the harness's counts.
type PoolState struct {
	// HoldsTracked: the pool counts a holder per acquisition (false for
	// the scheduler's shared acquisitions without a lease, which hold
	// nothing, and whose ends release nothing).
	HoldsTracked bool
	Holders      int // holds (leases) outstanding
	Waiters      int // callers waiting
	Active       int // resources acquirable
	Total        int // resources in the pool, whatever their state
	Draining     int
	Excluded     int
	// Suspended, Ejected and RateLimited resources are resting.
	Suspended   int
	Ejected     int
	RateLimited int
	// CountsCancelled: Cancelled is the number of waits ended by their
	// context, as the pool counts them.
	CountsCancelled bool
	Cancelled       uint64
	// Health is the pool's own health totals; nil if it keeps none.
	Health *HealthTotals
	// Calls are the health calls the harness made on the pool.
	Calls HealthCalls
	// Events counts the events an observer saw (nil: none observed), and
	// Dropped those the pool could not deliver.
	Events  *EventCounts
	Dropped uint64
	// Checks are the pool's own checks, added to the accounting.
	Checks []Check
	// Error, if not empty, is why the pool's view could not be read: the
	// accounting then fails.
	Error string
}

// HealthTotals are a pool's own health counters: the scheduler's
// Stats.Failures, Suspensions and Ejections.
type HealthTotals struct {
	Failures    uint64 `json:"failures"`
	Suspensions uint64 `json:"suspensions"`
	Ejections   uint64 `json:"ejections"`
}

// HealthCalls are the calls the harness made to report failures and rest
// resources. A release cooldown (the scheduler's Config.ReleaseCooldown)
// takes no call: every release starts it.
type HealthCalls struct {
	Fails     uint64 `json:"fails"`     // Lease.Fail, for a failed backend call
	Suspends  uint64 `json:"suspends"`  // Suspend, for a failed backend call (-suspend)
	Cooldowns uint64 `json:"cooldowns"` // Lease.Cooldown, a pool without a release cooldown of its own
	Includes  uint64 `json:"includes"`  // Include at the end, ending a rest early
}

// EventCounts are the events an observer saw, by type.
type EventCounts struct {
	Add     uint64 `json:"add"`
	Acquire uint64 `json:"acquire"`
	Release uint64 `json:"release"`
	Exclude uint64 `json:"exclude"`
	Include uint64 `json:"include"`
	Remove  uint64 `json:"remove"`
	Suspend uint64 `json:"suspend"`
	Eject   uint64 `json:"eject"`
	Resume  uint64 `json:"resume"`
}

// Extension adds a pool under test to the command: cmd/crsload-redis of
// the redispool module adds a pool kept in Redis, which the root module
// cannot import (it has no third-party dependency). MainWith and
// ParseFlags take extensions; Main has none.
type Extension struct {
	// Name is the pool's name in Config.Pool and in reports ("redis").
	Name string
	// Command, if not empty, is the name of the command the extension
	// belongs to ("crsload-redis"), which its messages and usage then
	// go by instead of crsload.
	Command string
	// Title names the pool in the report's heading; it is called once the
	// flags are parsed.
	Title func() string
	// Usage, if not empty, is a paragraph added to -h.
	Usage string
	// Flags registers the extension's flags.
	Flags func(fs *flag.FlagSet)
	// Configure runs once the flags are parsed and the scenario's defaults
	// applied. It reports whether the extension's flags select its pool;
	// if they do, it may change settings the user did not give (given
	// tells which were), and returns an error for settings its pool cannot
	// run.
	Configure func(c *Config, given func(flag string) bool) (selected bool, err error)
	// Open makes the pool for a run of cfg: resources indexed 0 to
	// cfg.Resources-1, each with the policy and capacity of cfg. ctx is
	// the run's: when a signal ends it, Open stops where it is, releases
	// what it took and returns an error; nothing runs then.
	Open func(ctx context.Context, cfg Config) (Pool, error)
	// LLM, if set, makes the llm scenario's client on the extension's
	// pool for keys (cfg.LLM has the limits): with -scenario llm, the
	// extension's flags select it in place of the scheduler. LLMTitle
	// names the client in the report, after Title. ctx is as for Open.
	LLM      func(ctx context.Context, cfg Config, keys []string) (LLMClient, error)
	LLMTitle string
	// Tenants, if set, opens the tenants scenario's pool on the
	// extension: cfg.Resources exclusive keys, with cfg.Tenants's weights
	// when fair, first come, first served (no tenants, no priorities)
	// otherwise. It is called twice, once for each run, each pool closed
	// before the next opens. Without it, the extension's flags make
	// -scenario tenants a usage error. ctx is as for Open.
	Tenants func(ctx context.Context, cfg Config, fair bool) (TenantsPool, error)
	// CooldownSlack is how much earlier than the cooldown the pool may
	// hand a resource out again, its clock being coarser than the
	// harness's (Redis keeps rests in whole milliseconds): the check "no
	// acquisition within a cooldown" allows that much.
	CooldownSlack time.Duration
}

// Pool is an Extension's pool under test. Its methods are called from
// many goroutines at once, except Finish, State and Close, which are
// called once each, in that order, after the workers have stopped.
// (The built-in pools implement an interface of the engine's own, which
// saves them an allocation per request; a pool reached over the network
// does not notice one.)
type Pool interface {
	// Acquire waits for a resource until ctx ends. Its error, when ctx
	// ended, must wrap ctx.Err(), so that the harness tells a timeout from
	// a failure.
	Acquire(ctx context.Context) (Acquisition, error)
	// Finish ends every rest still pending, so that State sees every
	// resource back. Its error fails the accounting; State is called
	// all the same, for what it can tell.
	Finish() error
	// State reads the pool's view of itself, for the accounting.
	State() (PoolState, error)
	// Close releases what the pool holds (connections).
	Close()
}

// Acquisition is one acquisition from a Pool.
type Acquisition interface {
	// Resource is the index of the resource acquired, in [0, Resources).
	Resource() int
	// End releases the acquisition; failed says the backend call failed,
	// for the pool's failure handling. The harness calls it exactly once.
	End(failed bool) error
}

// extHandle is one acquisition from an extension's pool.
type extHandle struct{ a Acquisition }

// extPool drives an extension's Pool.
type extPool struct {
	p         Pool
	resources int
	finishErr error
}

func (x *extPool) acquire(ctx context.Context, h *extHandle) (int, error) {
	a, err := x.p.Acquire(ctx)
	if err != nil {
		return -1, err
	}
	r := a.Resource()
	if r < 0 || r >= x.resources {
		_ = a.End(false)
		return -1, fmt.Errorf("the pool handed out resource %d, not one of the run's %d", r, x.resources)
	}
	*h = extHandle{a: a}
	return r, nil
}

func (x *extPool) end(h *extHandle, failed bool) error {
	a := h.a
	if a == nil {
		return errReleased
	}
	h.a = nil
	return a.End(failed)
}

func (x *extPool) finish() { x.finishErr = x.p.Finish() }

func (x *extPool) state() PoolState {
	st, err := x.p.State()
	if err = errors.Join(x.finishErr, err); err != nil {
		st.Error = err.Error()
	}
	return st
}

func (x *extPool) close() { x.p.Close() }
