package waitload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// harness drives one pool: it owns the per-resource records, the ticket
// counter and the first failure.
type harness[Tok any] struct {
	pool  pool[Tok]
	hold  time.Duration
	epoch time.Time
	win   window // set before the workers start, read-only after
	slots []slot
	// all counts FIFO inversions among every grant in the window; steady
	// only among requests that also began inside it, after the burst of
	// the gate opening (see fifo).
	all, steady fifo
	tickets     atomic.Uint64

	violations atomic.Int64
	errOnce    sync.Once
	err        error
}

func newHarness[Tok any](p pool[Tok], cfg Config) *harness[Tok] {
	return &harness[Tok]{
		pool:  p,
		hold:  cfg.Hold,
		epoch: time.Now(),
		slots: make([]slot, cfg.Resources),
	}
}

// now is the harness's clock: monotonic nanoseconds since its epoch, so
// never 0 once the run has started.
func (h *harness[Tok]) now() int64 { return int64(time.Since(h.epoch)) }

func (h *harness[Tok]) fail(err error) {
	h.errOnce.Do(func() { h.err = err })
}

// preallocate sizes each resource's hand-off record for the expected
// number of grants, so that appending to it does not allocate during the
// run (it still may if the estimate is short).
func (h *harness[Tok]) preallocate(cfg Config) {
	hold := max(cfg.Hold, 50*time.Microsecond)
	per := int(cfg.Duration/hold) + 1024
	for i := range h.slots {
		h.slots[i].handoffs = make([]int64, 0, per)
	}
}

// worker repeats requests until ctx ends. A request that was granted
// after ctx ended is still held and released, as real code would.
func (h *harness[Tok]) worker(ctx context.Context, gate <-chan struct{}) {
	<-gate
	for ctx.Err() == nil {
		if !h.request(ctx) {
			return
		}
	}
}

// request is one acquire, hold, release. It reports false when the worker
// must stop: its context ended while it waited, or the pool failed.
func (h *harness[Tok]) request(ctx context.Context) bool {
	var g grant
	ticket := h.tickets.Add(1)
	g.began = h.now()
	tok, err := h.pool.acquire(ctx)
	g.got = h.now()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr == nil || !errors.Is(err, ctxErr) {
			h.fail(fmt.Errorf("acquire: %w", err))
		}
		return false
	}
	r := h.pool.resource(tok)
	if r < 0 || r >= len(h.slots) {
		h.fail(fmt.Errorf("acquire returned resource %d of %d", r, len(h.slots)))
		_ = h.pool.release(tok)
		return false
	}
	s := &h.slots[r]
	if s.holders.Add(1) != 1 {
		h.violations.Add(1)
	}
	g.previous = s.lastRelease.Load()
	if g.got >= h.win.start && g.got < h.win.stop {
		h.all.granted(ticket)
		if g.began >= h.win.start {
			h.steady.granted(ticket)
		}
	}

	time.Sleep(h.hold)

	g.released = h.now()
	s.record(g, h.win)
	s.lastRelease.Store(g.released)
	s.holders.Add(-1)
	if err := h.pool.release(tok); err != nil {
		h.fail(fmt.Errorf("release of resource %d: %w", r, err))
		return false
	}
	return true
}
