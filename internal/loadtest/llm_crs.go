package loadtest

import (
	"context"
	"fmt"
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

// crsClient leases a key per attempt from a scheduler.
type crsClient struct {
	s *scheduler.Scheduler[llmKey, string]
}

func newCRSClient(lc LLMConfig, keys []string) (*crsClient, error) {
	s, err := scheduler.New(config.Config[llmKey, string]{
		// Every key ranks the same: which goes first is the scheduler's
		// routing.
		Comparator:    func(a, b llmKey) int { return 0 },
		KeyFunc:       func(k llmKey) string { return k.name },
		AcquirePolicy: config.Shared,
		RateLimit: func(llmKey) (float64, int) {
			if lc.RPM == 0 {
				return 0, 0
			}
			return float64(lc.RPM) / 60, int(lc.RPM)
		},
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
	return &crsClient{s: s}, nil
}

func (c *crsClient) pick(ctx context.Context, _ llmCall) (llmHold, error) {
	l, err := c.s.Lease(ctx)
	if err != nil {
		return nil, err
	}
	return &crsHold{l: l}, nil
}

func (c *crsClient) finish() []Check {
	st := c.s.Stats()
	return []Check{{
		Name:   "the scheduler has no holder and no waiter left",
		OK:     st.Holders == 0 && st.Waiters == 0,
		Detail: fmt.Sprintf("holders %d, waiters %d", st.Holders, st.Waiters),
	}}
}

func (c *crsClient) close() { c.s.Shutdown() }

type crsHold struct {
	l scheduler.Lease[llmKey, string]
}

func (h *crsHold) key() int { return h.l.Value().index }

func (h *crsHold) served(a llmAnswer) error { return h.l.Release() }

// refused rests the key for the 429's retry-after: the worker then asks
// the scheduler again at once, which hands it another key, or makes it
// wait for one.
func (h *crsHold) refused(a llmAnswer) (time.Duration, error) {
	return 0, h.l.Cooldown(a.retryAfter)
}

func (h *crsHold) failed(llmAnswer) error { return h.l.Fail() }

func (h *crsHold) unsent() error { return h.l.Release() }
