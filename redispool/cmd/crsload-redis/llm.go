package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/loadtest"
	"github.com/crsched/crs/redispool"
)

// This file is the llm scenario's client on a redispool pool: the keys
// are resources of the pool, with the provider's limits as their
// buckets, kept in Redis and shared by every process of the session.

// llmClient leases a key per attempt from the pool. The resources are
// key-01 to key-NN, never the keys themselves, which are secrets: each
// process maps an index to its own copy of the key.
type llmClient struct {
	p *redisPool
	// settled counts the served calls whose lease was settled to their
	// usage, served the served calls; failures the feedback calls
	// (Observe, Settle, Release, Cooldown, Fail) that returned an error.
	settled, served, failures atomic.Uint64
	gate                      *loadtest.KeyGate // this process's probes of failed keys
	// limits are each limit's Max as this process last set or learned
	// it, by key index and name: an answer stating another is Learned.
	mu     sync.Mutex
	limits []map[string]int64
}

// openLLMClient joins the pool's session and adds the keys, unless
// another process of the session has; the end of ctx (a signal) stops
// it.
func openLLMClient(ctx context.Context, cfg loadtest.Config, keys []string, f redisFlags, log io.Writer) (*llmClient, error) {
	limits := cfg.LLM.Limits()
	rs := make([]redispool.Resource, len(keys))
	for i := range rs {
		// Shared: a key takes any number of calls at once.
		rs[i] = redispool.Resource{ID: fmt.Sprintf("key-%02d", i+1), Capacity: redispool.MaxCapacity, Limits: limits}
	}
	// The keys' fingerprint, in order: key-01 must be the same key in
	// every process. A short hash of the secrets, salted with the pool's
	// name, tells them apart without putting them in Redis.
	sum := sha256.Sum256([]byte(f.name + "\x00" + strings.Join(keys, "\n")))
	shape := fmt.Sprintf("llm keys of %d rpm and %d tpm, keys %x", cfg.LLM.RPM, cfg.LLM.TPM, sum[:6])
	p, err := openPoolOf(ctx, cfg, f, log, rs, shape)
	if err != nil {
		return nil, err
	}
	c := &llmClient{p: p, gate: loadtest.NewKeyGate(len(keys)), limits: make([]map[string]int64, len(keys))}
	for i := range c.limits {
		c.limits[i] = map[string]int64{}
		for _, l := range limits {
			c.limits[i][l.Name] = l.Max
		}
	}
	return c, nil
}

// Pick leases a key whose buckets cover the call: a request (a limit the
// cost does not name costs 1) and its estimate in tokens. A key without
// a tokens limit ignores the tokens, even when no key has one
// (AllowUnknownLimits). A key the loadtest.KeyGate turns away is
// refunded and rests for loadtest.GateRest, in every process, and the
// call asks again.
func (c *llmClient) Pick(ctx context.Context, call loadtest.LLMCall) (loadtest.LLMHold, error) {
	for {
		l, err := c.p.pool.Acquire(ctx, redispool.WithCost(config.Cost{"tokens": call.Estimate}), redispool.AllowUnknownLimits())
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
				err = fmt.Errorf("%w (%w)", ctxErr, err)
			}
			return nil, err
		}
		rctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		i, ok := c.p.index[l.ID]
		if !ok {
			defer cancel()
			return nil, errors.Join(fmt.Errorf("the pool handed out %q, not one of this run's keys", l.ID), l.Release(rctx))
		}
		if ok, probe := c.gate.Admit(i, call); ok {
			cancel()
			return &llmHold{c: c, l: l, index: i, estimate: call.Estimate, probe: probe}, nil
		}
		err = errors.Join(c.note(l.Settle(rctx, config.Cost{"requests": 0, "tokens": 0})), c.note(l.Cooldown(rctx, loadtest.GateRest)))
		cancel()
		if err != nil {
			return nil, err
		}
	}
}

// Finish waits for the session's other processes (redisPool.Finish), then
// checks the pool: no lease or waiter left, no key's budget in debt, and
// every call this process was served settled.
func (c *llmClient) Finish() []loadtest.Check {
	err := c.p.Finish()
	var checks []loadtest.Check
	if err != nil {
		checks = append(checks, loadtest.Check{Name: "the other processes on the pool finished", Detail: err.Error()})
	}
	st, err := c.p.State()
	switch {
	case err != nil:
		checks = append(checks, loadtest.Check{Name: "the pool's stats were read", Detail: err.Error()})
	case c.p.finishErr == nil:
		checks = append(checks, loadtest.Check{
			Name:   "the pool has no lease and no waiter left",
			OK:     st.Holders == 0 && st.Waiters == 0,
			Detail: fmt.Sprintf("leases %d (every process's), waiters %d (this one's)", st.Holders, st.Waiters),
		})
		checks = append(checks, st.Checks...)
	}
	var debts []string
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, id := range c.p.ids {
		left, err := c.p.pool.Remaining(ctx, id)
		if err != nil {
			debts = append(debts, err.Error())
		}
		for name, n := range left {
			if n < 0 {
				debts = append(debts, fmt.Sprintf("%s %s %d", id, name, n))
			}
		}
	}
	checks = append(checks, loadtest.Check{
		Name:   "no key's budget is in debt",
		OK:     len(debts) == 0,
		Detail: or(strings.Join(debts, ", "), "per Pool.Remaining"),
	})
	settled, served, failures := c.settled.Load(), c.served.Load(), c.failures.Load()
	return append(checks, loadtest.Check{
		Name:   "every served call was settled",
		OK:     settled == served && failures == 0,
		Detail: fmt.Sprintf("%d settled of %d served; %d feedback calls failed", settled, served, failures),
	})
}

func (c *llmClient) Close() { c.p.Close() }

// note counts a feedback call that failed, and returns its error.
func (c *llmClient) note(err error) error {
	if err != nil {
		c.failures.Add(1)
	}
	return err
}

// relearn reports whether limit is not the Max this process last knew
// for key i's limit name, and records it.
func (c *llmClient) relearn(i int, name string, limit int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limits[i][name] == limit {
		return false
	}
	c.limits[i][name] = limit
	return true
}

// llmHold is one attempt's lease. Its feedback does not depend on the
// worker's context: a call let finish after the window still settles.
type llmHold struct {
	c        *llmClient
	l        *redispool.Lease
	index    int
	estimate int64 // the tokens the lease was granted on
	probe    bool  // the attempt probes a key that failed (loadtest.KeyGate)
}

func (h *llmHold) Key() int { return h.index }

// Served feeds the answer back as loadtest.Feedback says: the provider's
// figures first (Observe), less the refund to come, then the settlement,
// so that no process sees the refund before the provider's figure; then
// the release.
func (h *llmHold) Served(a loadtest.LLMAnswer) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h.c.gate.Done(h.index, h.probe, &a)
	h.c.served.Add(1)
	seen, tokens := loadtest.Feedback(a, h.estimate)
	err := h.observe(ctx, seen)
	serr := h.c.note(h.l.Settle(ctx, config.Cost{"tokens": tokens}))
	if serr == nil {
		h.c.settled.Add(1)
	}
	return errors.Join(err, serr, h.c.note(h.l.Release(ctx)))
}

// observe feeds the provider's x-ratelimit-remaining-* back, for the
// limits the keys have (Observe never raises a bucket), after a limit
// the provider states otherwise than the pool holds (Learn), which every
// process then sees.
func (h *llmHold) observe(ctx context.Context, seen map[string]loadtest.Remaining) error {
	var err error
	for _, l := range h.c.p.cfg.LLM.Limits() {
		if r, ok := seen[l.Name]; ok && r.Limit > 0 && h.c.relearn(h.index, l.Name, r.Limit) {
			err = errors.Join(err, h.c.note(h.l.Learn(ctx, l.Name, r.Limit)))
		}
		if r, ok := seen[l.Name]; ok && r.Units >= 0 {
			err = errors.Join(err, h.c.note(h.l.Observe(ctx, l.Name, r.Units, r.Reset)))
		}
	}
	return err
}

// Refused rests the key for the 429's retry-after, in every process: the
// worker then asks the pool again at once.
func (h *llmHold) Refused(a loadtest.LLMAnswer) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h.c.gate.Done(h.index, h.probe, &a)
	err := h.observe(ctx, a.Remaining)
	return 0, errors.Join(err, h.c.note(h.l.Cooldown(ctx, a.RetryAfter)))
}

// Failed settles a call the provider did not run to a request and no
// tokens (a call with no answer keeps its estimate: it may have run),
// and ends the lease: with Fail, toward the key's ejection in every
// process, if the key failed, with a release otherwise.
func (h *llmHold) Failed(a loadtest.LLMAnswer) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h.c.gate.Done(h.index, h.probe, &a)
	var err error
	if a.Unrun() {
		err = h.c.note(h.l.Settle(ctx, config.Cost{"tokens": 0}))
	}
	if a.KeyFault() {
		return errors.Join(err, h.c.note(h.l.Fail(ctx)))
	}
	return errors.Join(err, h.c.note(h.l.Release(ctx)))
}

// Unsent refunds the call, which spent nothing, and ends the lease.
func (h *llmHold) Unsent() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h.c.gate.Done(h.index, h.probe, nil)
	return errors.Join(h.c.note(h.l.Settle(ctx, config.Cost{"requests": 0, "tokens": 0})), h.c.note(h.l.Release(ctx)))
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
