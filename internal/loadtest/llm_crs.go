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
}

// newCRSClient makes the client; clock is the scheduler's (nil: the
// system's), which tests replace.
func newCRSClient(lc LLMConfig, keys []string, clock config.Clock) (*crsClient, error) {
	var limits []config.Limit
	limited := map[string]bool{}
	if lc.RPM > 0 {
		limits = append(limits, config.Limit{Name: "requests", Max: lc.RPM, Per: time.Minute})
	}
	if lc.TPM > 0 {
		limits = append(limits, config.Limit{Name: "tokens", Max: lc.TPM, Per: time.Minute})
	}
	s, err := scheduler.New(config.Config[llmKey, string]{
		// Every key ranks the same, so the scheduler routes by headroom:
		// the key with the most budget left goes first.
		Comparator:    func(a, b llmKey) int { return 0 },
		KeyFunc:       func(k llmKey) string { return k.name },
		AcquirePolicy: config.Shared, // a key takes any number of calls at once
		Limits:        func(llmKey) []config.Limit { return limits },
		Clock:         clock,
	})
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if err := s.Add(llmKey{index: i, name: k}); err != nil {
			s.Shutdown()
			return nil, err
		}
	}
	for _, l := range limits {
		limited[l.Name] = true
	}
	return &crsClient{s: s, keys: keys, limited: limited}, nil
}

// pick leases a key whose buckets cover the call: a request (a limit the
// cost does not name costs 1) and its estimate in tokens, the most the
// provider may charge it up front. A key without a tokens limit ignores
// the tokens.
func (c *crsClient) pick(ctx context.Context, call llmCall) (llmHold, error) {
	l, err := c.s.Lease(ctx, scheduler.WithCost(config.Cost{"tokens": call.estimate}))
	if err != nil {
		return nil, err
	}
	return &crsHold{c: c, l: l}, nil
}

// finish checks that the scheduler ends with nothing held or waiting and
// no bucket in debt: every call spent at most its estimate.
func (c *crsClient) finish() []Check {
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

func (c *crsClient) close() { c.s.Shutdown() }

type crsHold struct {
	c *crsClient
	l scheduler.Lease[llmKey, string]
}

func (h *crsHold) key() int { return h.l.Value().index }

// served settles the lease to the call's usage, so that the unused part
// of max_tokens goes back to the key, lowers the buckets to what the
// provider says is left, and ends the lease.
func (h *crsHold) served(a llmAnswer) error {
	err := h.l.Settle(config.Cost{"tokens": a.usage.Total})
	err = errors.Join(err, h.observe(a))
	return errors.Join(err, h.l.Release())
}

// observe feeds the provider's x-ratelimit-remaining-* back, for the
// limits the key has (Observe never raises a bucket).
func (h *crsHold) observe(a llmAnswer) error {
	var err error
	for name, r := range a.remaining {
		if h.c.limited[name] {
			err = errors.Join(err, h.l.Observe(name, r.units, r.reset))
		}
	}
	return err
}

// refused rests the key for the 429's retry-after: the worker then asks
// the scheduler again at once, which hands it another key, or makes it
// wait for one.
func (h *crsHold) refused(a llmAnswer) (time.Duration, error) {
	return 0, errors.Join(h.observe(a), h.l.Cooldown(a.retryAfter))
}

// failed ends the lease as a failure, the estimate kept: the call may
// have reached the provider.
func (h *crsHold) failed(llmAnswer) error { return h.l.Fail() }

// unsent refunds the call, which spent nothing, and ends the lease.
func (h *crsHold) unsent() error {
	return errors.Join(h.l.Settle(config.Cost{"requests": 0, "tokens": 0}), h.l.Release())
}
