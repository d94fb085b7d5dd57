package loadtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// This file is the llm scenario's crs client: every call the scheduler
// makes in the scenario is here.

// llmKey is an API key as the scheduler holds it.
type llmKey struct {
	index int
	name  string
}

// crsClient leases a key per attempt from a scheduler whose budgets are
// the provider's limits.
type crsClient struct {
	s       *scheduler.Scheduler[llmKey, string]
	keys    []string
	limited map[string]bool // the names of the keys' limits
	gate    *KeyGate
}

// newCRSClient makes the client; ej is the scheduler's Ejection, which
// Lease.Fail feeds; clock is the scheduler's (nil: the system's), which
// tests replace. The keys go in in chunks, between which a signal (the
// end of ctx) stops it.
func newCRSClient(ctx context.Context, lc LLMConfig, ej config.Ejection, keys []string, clock config.Clock) (*crsClient, error) {
	limits := lc.Limits()
	limited := map[string]bool{}
	s, err := scheduler.New(config.Config[llmKey, string]{
		// Every key ranks the same, so the scheduler routes by headroom:
		// the key with the most budget left goes first.
		Comparator:    func(a, b llmKey) int { return 0 },
		KeyFunc:       func(k llmKey) string { return k.name },
		AcquirePolicy: config.Shared, // a key takes any number of calls at once
		Limits:        func(llmKey) []config.Limit { return limits },
		Ejection:      ej,
		Clock:         clock,
	})
	if err != nil {
		return nil, err
	}
	err = inChunks(ctx, len(keys), "adding the keys", func(from, to int) error {
		batch := make([]llmKey, 0, to-from)
		for i := from; i < to; i++ {
			batch = append(batch, llmKey{index: i, name: keys[i]})
		}
		return s.BatchAdd(batch)
	})
	if err != nil {
		s.Shutdown()
		return nil, err
	}
	for _, l := range limits {
		limited[l.Name] = true
	}
	return &crsClient{s: s, keys: keys, limited: limited, gate: NewKeyGate(len(keys))}, nil
}

// Pick leases a key whose buckets cover the call: a request (a limit the
// cost does not name costs 1) and its estimate in tokens, the most the
// provider may charge it up front. A key without a tokens limit ignores
// the tokens, even when no key has one (AllowUnknownLimits). A key the
// KeyGate turns away rests for GateRest, and the call
// asks again.
func (c *crsClient) Pick(ctx context.Context, call LLMCall) (LLMHold, error) {
	for {
		l, err := c.s.Lease(ctx, scheduler.WithCost(config.Cost{"tokens": call.Estimate}), scheduler.AllowUnknownLimits())
		if err != nil {
			return nil, err
		}
		if ok, probe := c.gate.Admit(l.Value().index, call); ok {
			return &crsHold{c: c, l: l, estimate: call.Estimate, probe: probe}, nil
		}
		// Not settled: a settlement is an answer (config.Limit.Admission),
		// and the provider never saw this call; the next answer's figures
		// give its estimate back (Lease.Reconcile).
		if err := l.Cooldown(GateRest); err != nil {
			return nil, err
		}
	}
}

// Finish checks that the scheduler ends with nothing held or waiting and
// no bucket in debt: every call spent at most its estimate.
func (c *crsClient) Finish() []Check {
	st := c.s.Stats()
	checks := []Check{{
		Name:   "the scheduler has no lease and no waiter left",
		OK:     st.Holders == 0 && st.Waiters == 0,
		Detail: fmt.Sprintf("holders %d, waiters %d", st.Holders, st.Waiters),
	}}
	var debts []string
	for _, k := range c.keys {
		left, err := c.s.Remaining(k)
		if err != nil {
			debts = append(debts, err.Error())
		}
		for name, n := range left {
			if n < 0 {
				debts = append(debts, fmt.Sprintf("%s %d", name, n))
			}
		}
	}
	return append(checks, Check{
		Name:   "no key's budget is in debt",
		OK:     len(debts) == 0,
		Detail: or(strings.Join(debts, ", "), "per Scheduler.Remaining"),
	})
}

func (c *crsClient) Close() { c.s.Shutdown() }

type crsHold struct {
	c        *crsClient
	l        scheduler.Lease[llmKey, string]
	estimate int64 // the tokens the lease was granted on
	probe    bool  // the attempt probes a key that failed (KeyGate)
}

func (h *crsHold) Key() int { return h.l.Value().index }

// Served settles the lease to the answer's usage and takes the
// provider's figures, its limits among them, in one step
// (Lease.Reconcile), then ends the lease.
func (h *crsHold) Served(a LLMAnswer) error {
	h.c.gate.Done(h.Key(), h.probe, &a)
	err := h.l.Reconcile(config.Cost{"tokens": a.Usage.Total}, h.c.reported(a.Remaining))
	return errors.Join(err, h.l.Release())
}

// reported is what an answer said of the limits the keys have.
func (c *crsClient) reported(seen map[string]Remaining) map[string]scheduler.Reported {
	var out map[string]scheduler.Reported
	for name, r := range seen {
		if !c.limited[name] {
			continue
		}
		if out == nil {
			out = make(map[string]scheduler.Reported, len(seen))
		}
		out[name] = scheduler.Reported{Remaining: r.Units, Reset: r.Reset, Limit: r.Limit}
	}
	return out
}

// Refused rests the key for the 429's retry-after: the worker then asks
// the scheduler again at once, which hands it another key, or makes it
// wait for one.
func (h *crsHold) Refused(a LLMAnswer) (time.Duration, error) {
	h.c.gate.Done(h.Key(), h.probe, &a)
	// The provider charged the refused call nothing: it is settled to
	// nothing, and its figures taken, before the key rests.
	err := h.l.Reconcile(config.Cost{"requests": 0, "tokens": 0}, h.c.reported(a.Remaining))
	return 0, errors.Join(err, h.l.Cooldown(a.RetryAfter))
}

// Failed settles a call the provider did not run to a request and no
// tokens (a call with no answer keeps its estimate: it may have run),
// and ends the lease: with Fail, toward the key's ejection, if the key
// failed, with a release otherwise.
func (h *crsHold) Failed(a LLMAnswer) error {
	h.c.gate.Done(h.Key(), h.probe, &a)
	var err error
	if a.Unrun() {
		err = h.l.Reconcile(config.Cost{"tokens": 0}, h.c.reported(a.Remaining))
	}
	if a.KeyFault() {
		return errors.Join(err, h.l.Fail())
	}
	return errors.Join(err, h.l.Release())
}

// Unsent refunds the call, which spent nothing, and ends the lease.
func (h *crsHold) Unsent() error {
	h.c.gate.Done(h.Key(), h.probe, nil)
	return errors.Join(h.l.Settle(config.Cost{"requests": 0, "tokens": 0}), h.l.Release())
}
