package loadtest

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
)

// LLMClient is how the llm scenario's calls get their API key: the crs
// scheduler (llm_crs.go), the naive round robin (naiveClient), or an
// Extension's client on a pool shared by several processes
// (cmd/crsload-redis). Its methods are called from many workers at once.
type LLMClient interface {
	// Pick waits until the client lets call c go out and returns the
	// hold it goes out under. Its error wraps ctx's when ctx ended.
	Pick(ctx context.Context, c LLMCall) (LLMHold, error)
	// Finish runs once every worker has stopped: the client's own checks
	// for the accounting.
	Finish() []Check
	Close()
}

// LLMHold is one attempt's key, from Pick. Exactly one of its methods
// other than Key is called, once.
type LLMHold interface {
	Key() int // the key's index in the run's keys
	// Served: the provider answered 200; a has its usage and headers.
	Served(a LLMAnswer) error
	// Refused: a 429 with a retry-after. It returns how long the worker
	// waits before the next attempt (the client's own wait, if it keeps
	// none in its pool).
	Refused(a LLMAnswer) (time.Duration, error)
	// Failed: any other answer, or none (a transport error, a timeout).
	// A call the provider did not run (a.Unrun) is settled to a request
	// and no tokens; a failure of the key (a.KeyFault) ends with
	// Lease.Fail, toward the key's ejection, any other with a release.
	// The run retries a call whose key failed on another key (see
	// LLMConfig.Retries).
	Failed(a LLMAnswer) error
	// Unsent: the window ended between Pick and the call, which is not
	// made.
	Unsent() error
}

// Feedback is how a client that keeps a provider's budgets with Observe
// and Settle (redispool's Lease) takes a served answer back (the
// scheduler's Lease.Reconcile does it in one step, and more), whether the provider refunds the unused part of a
// call's estimate when the call ends (most do; the mock does) or keeps
// the estimate charged (mockprovider's KeepEstimate): observe the figures
// it returns (Lease.Observe), then settle the tokens to the amount it
// returns (Lease.Settle).
//
// Settling to the usage first and observing after (the natural order)
// lets the refund, est - usage, serve a waiter in the same step as the
// settlement, before the provider's figure lowers the bucket: with a
// provider that kept the estimate, that waiter goes out on budget the
// provider does not have, and is refused. So the tokens figure is
// observed first, less the refund still to come, and the refund is at
// most what the provider says is left (remaining R): the bucket, at L
// before the two steps, ends at min(L + refund, R) when R covers the
// refund, and at most R otherwise, and is never above that in between.
// A provider that refunded reports R = L + refund, and both steps change
// nothing more than the plain settlement would. A call that spent more
// than its estimate (an overrun) is the other way round: a provider that
// settles to the usage has charged the overrun already, and R says so, so
// the figure is observed plus the overrun still to be taken, and the
// bucket ends at min(L - overrun, R), having taken the overrun once.
// Without a tokens figure, the answer settles to its usage. The call's
// recorded cost is then at least its usage.
func Feedback(a LLMAnswer, estimate int64) (observe map[string]Remaining, tokens int64) {
	tokens = a.Usage.Total
	r, ok := a.Remaining["tokens"]
	refund := estimate - a.Usage.Total
	if !ok || r.Units < 0 || refund == 0 {
		return a.Remaining, tokens
	}
	if refund > 0 {
		refund = min(refund, r.Units)
		tokens = estimate - refund
		r.Units -= refund
	} else {
		r.Units = min(r.Units-refund, config.MaxUnits) // plus the overrun
	}
	observe = make(map[string]Remaining, len(a.Remaining))
	for name, v := range a.Remaining {
		observe[name] = v
	}
	observe["tokens"] = r
	return observe, tokens
}

// KeyGate keeps a key whose last attempt failed (LLMAnswer.KeyFault) to
// one attempt at a time, a probe, until an attempt on it is answered
// again, and keeps a call off the keys it failed on (LLMCall.Avoid).
// Without it, a dead key that answers at once would take a call from
// every waiter each time its ejection ends: its budget, refunded by the
// failures, is the largest, so the scheduler hands it out first. A
// client's Pick asks Admit about each key it is handed, and rests a key
// it may not use for GateRest.
type KeyGate struct{ state []atomic.Int32 }

// GateRest is how long a key that KeyGate turned away rests: long enough
// that the waiters go to other keys, short against a probe's answer.
const GateRest = 100 * time.Millisecond

// The states of a key in a KeyGate.
const (
	keyHealthy int32 = iota
	keySuspect       // its last attempt failed; no probe out
	keyProbed        // its last attempt failed; a probe is out
)

// NewKeyGate returns a gate for keys keys, all of them healthy.
func NewKeyGate(keys int) *KeyGate { return &KeyGate{state: make([]atomic.Int32, keys)} }

// Admit reports whether call c may go out on key i, and whether it goes
// as the key's probe (to be reported to Done).
func (g *KeyGate) Admit(i int, c LLMCall) (ok, probe bool) {
	if slices.Contains(c.Avoid, i) {
		return false, false
	}
	s := &g.state[i]
	switch s.Load() {
	case keyHealthy:
		return true, false
	case keySuspect:
		if s.CompareAndSwap(keySuspect, keyProbed) {
			return true, true
		}
	}
	return false, false
}

// Done records the end of an attempt on key i that Admit let go: a
// failure of the key makes it suspect, any answer healthy, and an
// attempt that was not sent leaves it as it found it.
func (g *KeyGate) Done(i int, probe bool, a *LLMAnswer) {
	s := &g.state[i]
	switch {
	case a == nil: // not sent
		if probe {
			s.Store(keySuspect)
		}
	case !a.KeyFault():
		s.Store(keyHealthy)
	case probe:
		s.Store(keySuspect)
	default:
		s.CompareAndSwap(keyHealthy, keySuspect)
	}
}

// naiveClient is what most gateways do: round robin over the keys, and
// after a 429, wait its retry-after and try the next key. It keeps no
// count of what a key has spent.
type naiveClient struct {
	keys int
	next atomic.Uint64
}

func newNaiveClient(keys int) *naiveClient { return &naiveClient{keys: keys} }

func (n *naiveClient) Pick(ctx context.Context, _ LLMCall) (LLMHold, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return naiveHold(int((n.next.Add(1) - 1) % uint64(n.keys))), nil
}

func (n *naiveClient) Finish() []Check { return nil }
func (n *naiveClient) Close()          {}

type naiveHold int

func (h naiveHold) Key() int                                   { return int(h) }
func (h naiveHold) Served(LLMAnswer) error                     { return nil }
func (h naiveHold) Refused(a LLMAnswer) (time.Duration, error) { return a.RetryAfter, nil }
func (h naiveHold) Failed(LLMAnswer) error                     { return nil }
func (h naiveHold) Unsent() error                              { return nil }
