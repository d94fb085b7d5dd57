package loadtest

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/crsched/crs/config"
)

// mutexPool is the baseline of -compare: what one would write without
// crs, a container/heap of resources under one sync.Mutex, with a FIFO of
// channels for callers waiting. It offers the same workload semantics as
// the scheduler (shared or exclusive, capacity, fewest holders first,
// cooldown, suspension and ejection), so that the two runs differ only in
// the pool. A rest started while the resource already rests is dropped
// (the scheduler keeps the later end): it matters little for a baseline.
type mutexPool struct {
	mu        sync.Mutex
	all       []*mutexRes
	free      resHeap          // acquirable resources, fewest holders first
	waiters   []chan *mutexRes // FIFO; a waiter whose context ended is removed
	shared    bool
	capacity  int
	cooldown  time.Duration
	suspend   time.Duration
	eject     int // failures in a row that eject a resource; 0: off
	ejectBase time.Duration
	ejectMax  time.Duration
	ejectCap  int // resources ejected at once, at most
	ejected   int // resources ejected now
	holders   int
	cancelled uint64
	timers    timerSet
}

type mutexRes struct {
	id        int
	holders   int
	index     int  // in free, -1 when not acquirable
	resting   bool // out of the pool for a cooldown, suspension or ejection
	ejected   bool // resting for an ejection
	failures  int  // in a row
	ejections int
}

// mutexHandle is one acquisition. done guards against a second release.
type mutexHandle struct {
	r    *mutexRes
	done bool
}

var errReleased = errors.New("released twice")

// newMutexPool is the baseline for cfg, with all its resources.
func newMutexPool(cfg Config) *mutexPool {
	p, _ := openMutexPool(context.Background(), cfg) // only ctx can fail it
	return p
}

// openMutexPool is newMutexPool, adding the resources in chunks between
// which a signal (the end of ctx) stops it.
func openMutexPool(ctx context.Context, cfg Config) (*mutexPool, error) {
	p := &mutexPool{
		shared:   cfg.Policy == config.Shared,
		capacity: cfg.Capacity,
		cooldown: cfg.Cooldown,
		suspend:  cfg.Suspend,
	}
	if cfg.Eject > 0 {
		p.eject, p.ejectBase, p.ejectMax = cfg.Eject, cfg.EjectBase, cfg.EjectMax
		// As the scheduler: never the last resource, and at most the
		// share (but always one).
		p.ejectCap = cfg.Resources - 1
		if cfg.EjectShare > 0 {
			p.ejectCap = min(p.ejectCap, max(1, int(cfg.EjectShare*float64(cfg.Resources))))
		}
	}
	err := inChunks(ctx, cfg.Resources, "adding the resources", func(from, to int) error {
		for i := from; i < to; i++ {
			r := &mutexRes{id: i}
			p.all = append(p.all, r)
			heap.Push(&p.free, r)
		}
		return nil
	})
	return p, err
}

func (p *mutexPool) full(r *mutexRes) bool { return !p.shared && r.holders >= p.capacity }

// take gives the caller a hold on the best free resource. Requires mu.
func (p *mutexPool) take() *mutexRes {
	r := p.free[0]
	r.holders++
	p.holders++
	if p.full(r) {
		heap.Remove(&p.free, 0)
	} else {
		heap.Fix(&p.free, 0)
	}
	return r
}

func (p *mutexPool) acquire(ctx context.Context, h *mutexHandle) (int, error) {
	p.mu.Lock()
	if len(p.free) > 0 {
		r := p.take()
		p.mu.Unlock()
		*h = mutexHandle{r: r}
		return r.id, nil
	}
	ch := make(chan *mutexRes, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
	select {
	case r := <-ch:
		*h = mutexHandle{r: r}
		return r.id, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.cancelled++
	for i, w := range p.waiters {
		if w == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return -1, ctx.Err()
		}
	}
	p.mu.Unlock()
	// Served as the context ended: pass the resource on, not lose it.
	r := <-ch
	p.mu.Lock()
	r.holders--
	p.holders--
	p.put(r)
	p.mu.Unlock()
	return -1, ctx.Err()
}

func (p *mutexPool) end(h *mutexHandle, failed bool) error {
	if h.done || h.r == nil {
		return errReleased
	}
	h.done = true
	d := p.cooldown
	if failed {
		d = max(d, p.suspend)
	}
	r := h.r
	p.mu.Lock()
	defer p.mu.Unlock()
	r.holders--
	p.holders--
	if p.eject > 0 {
		d = max(d, p.failure(r, failed))
	}
	if d > 0 && !r.resting {
		r.resting = true
		if r.index >= 0 {
			heap.Remove(&p.free, r.index)
		}
		p.timers.add(d, func() { p.wake(r) })
		return nil
	}
	p.put(r)
	return nil
}

// failure counts a call's outcome toward ejection, and returns how long
// the resource is ejected for (0: not ejected). Requires mu.
func (p *mutexPool) failure(r *mutexRes, failed bool) time.Duration {
	if !failed {
		r.failures = 0
		return 0
	}
	r.failures++
	if r.failures < p.eject || r.resting || p.ejected >= p.ejectCap {
		return 0
	}
	r.failures = 0
	r.ejections++
	r.ejected = true
	p.ejected++
	d := p.ejectBase * time.Duration(r.ejections)
	if p.ejectMax > 0 {
		d = min(d, p.ejectMax)
	}
	return d
}

func (p *mutexPool) wake(r *mutexRes) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.resting = false
	if r.ejected {
		r.ejected = false
		p.ejected--
	}
	p.put(r)
}

// put makes r acquirable if it can be, and serves waiters. Requires mu.
func (p *mutexPool) put(r *mutexRes) {
	if r.resting || p.full(r) {
		return
	}
	if r.index < 0 {
		heap.Push(&p.free, r)
	} else {
		heap.Fix(&p.free, r.index)
	}
	for len(p.waiters) > 0 && len(p.free) > 0 {
		w := p.waiters[0]
		p.waiters = p.waiters[1:]
		w <- p.take()
	}
}

func (p *mutexPool) finish() { p.timers.flush() }

func (p *mutexPool) state() PoolState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolState{
		HoldsTracked:    true,
		Holders:         p.holders,
		Waiters:         len(p.waiters),
		Active:          len(p.free),
		Total:           len(p.all),
		Ejected:         p.ejected,
		CountsCancelled: true,
		Cancelled:       p.cancelled,
	}
}

func (p *mutexPool) close() {}

// resHeap orders resources by holders, fewest first, like the scheduler's
// tie-break between equally good resources.
type resHeap []*mutexRes

func (h resHeap) Len() int           { return len(h) }
func (h resHeap) Less(i, j int) bool { return h[i].holders < h[j].holders }
func (h resHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *resHeap) Push(x any) {
	r := x.(*mutexRes)
	r.index = len(*h)
	*h = append(*h, r)
}
func (h *resHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	r.index = -1
	*h = old[:len(old)-1]
	return r
}
