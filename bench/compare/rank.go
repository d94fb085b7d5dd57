package compare

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// Rank error is what sharding costs in ordering: a sharded Acquire hands
// out the best resource of one shard, not of the pool, and the rank of an
// acquisition is the number of available resources strictly better than
// the one handed out (0: it was the best; ties are not errors).
//
// Method. The pool holds resources with random priorities under the
// Exclusive policy. Each goroutine repeats: Acquire; count, in a Fenwick
// tree of the available priorities kept by the harness, the priorities
// below the one it got (its rank), and remove it; Update it to a new random
// priority while held; Release it and insert the new priority. The pool
// keeps its size, and its shards churn as they would in service.
//
//   - One goroutine: acquisitions never overlap, the harness's set is
//     exactly the set the scheduler holds, and the rank is exact.
//   - Several goroutines: a Release and its insertion happen together under
//     the harness's lock, so the set is exact whenever that lock is free;
//     but an Acquire runs outside it, and its rank is counted when the
//     goroutine next gets the lock. In between, the other goroutines may
//     have taken resources (which may or may not have been available when
//     this Acquire looked) or put some back (which were not). Each such
//     change moves the count by at most one, so the rank is exact up to
//     their number, counted per acquisition and reported as the window;
//     on one heap, where the scheduler's order is exact, the whole measured
//     rank error is this slack.

// priorityRange bounds the random priorities: wide enough that ties are
// rare among 10,000 resources, narrow enough for a flat Fenwick tree.
const priorityRange = 1 << 20

// rankOptions sets up one measurement. The configuration to measure is a
// separate config.Config, so that a new scheduler option (an ordering, a
// strategy) is measured by setting its field there.
type rankOptions struct {
	resources  int    // pool size
	goroutines int    // acquiring at once; 1 means acquisitions never overlap
	warmup     int    // acquisitions per goroutine before measuring, to leave the initial load
	acquires   int    // measured acquisitions per goroutine
	seed       uint64 // for the priorities; a run is repeatable with one goroutine
}

// rankResult sums the ranks of the measured acquisitions.
type rankResult struct {
	n      int   // measured acquisitions
	sum    int64 // of their ranks
	max    int
	counts []int // counts[r]: acquisitions of rank r
	window int64 // sum of the other goroutines' changes between each acquisition and its count
}

func (r rankResult) mean() float64 { return float64(r.sum) / float64(max(r.n, 1)) }

// windowMean is the mean bound on the error of a rank measured while
// goroutines overlap (0 with one goroutine).
func (r rankResult) windowMean() float64 { return float64(r.window) / float64(max(r.n, 1)) }

// quantile returns the smallest rank that at least q of the acquisitions
// did not exceed.
func (r rankResult) quantile(q float64) int {
	need := int64(q * float64(r.n))
	var seen int64
	for rank, c := range r.counts {
		seen += int64(c)
		if seen >= need && seen > 0 {
			return rank
		}
	}
	return r.max
}

// merge adds the acquisitions of o to r.
func (r *rankResult) merge(o rankResult) {
	r.n += o.n
	r.sum += o.sum
	r.max = max(r.max, o.max)
	r.window += o.window
	if len(r.counts) < len(o.counts) {
		r.counts = append(r.counts, make([]int, len(o.counts)-len(r.counts))...)
	}
	for i, c := range o.counts {
		r.counts[i] += c
	}
}

// measureRank builds a scheduler from cfg, with the harness's comparator,
// key and the Exclusive policy, and measures the rank of opt's
// acquisitions.
func measureRank(cfg config.Config[*worker, string], opt rankOptions) (rankResult, error) {
	if opt.goroutines < 1 || opt.resources <= opt.goroutines {
		return rankResult{}, fmt.Errorf("rank: need at least one goroutine and more resources than goroutines, got %d and %d", opt.goroutines, opt.resources)
	}
	cfg.Comparator = byPriority
	cfg.KeyFunc = workerID
	cfg.AcquirePolicy = config.Exclusive
	s, err := scheduler.New(cfg)
	if err != nil {
		return rankResult{}, err
	}
	defer s.Shutdown()

	h := &rankHarness{s: s, avail: newFenwick(priorityRange)}
	h.result.counts = make([]int, opt.resources)
	rng := rand.New(rand.NewPCG(opt.seed, 0))
	ws := make([]*worker, opt.resources)
	for i := range ws {
		ws[i] = &worker{ID: "r" + strconv.Itoa(i), Priority: rng.IntN(priorityRange)}
		h.avail.add(ws[i].Priority, 1)
	}
	if err := s.BatchAdd(ws); err != nil {
		return rankResult{}, err
	}

	errs := make([]error, opt.goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range opt.goroutines {
		wg.Go(func() {
			<-start // so that the goroutines overlap from their first acquisition
			errs[g] = h.run(opt, rand.New(rand.NewPCG(opt.seed, uint64(g)+1)))
		})
	}
	close(start)
	wg.Wait()
	return h.result, errors.Join(errs...)
}

// rankHarness is the state the goroutines of one measurement share.
type rankHarness struct {
	s *scheduler.Scheduler[*worker, string]

	mu     sync.Mutex // guards avail and result; held across each Release
	avail  *fenwick   // priorities of the resources available
	result rankResult

	// changes counts the insertions into and removals from avail. It
	// changes under mu but is read before an Acquire without it.
	changes atomic.Uint64
}

// run is one goroutine's loop; rng gives the priorities it releases with.
func (h *rankHarness) run(opt rankOptions, rng *rand.Rand) error {
	for i := range opt.warmup + opt.acquires {
		before := h.changes.Load()
		v, err := h.s.Acquire()
		if err != nil {
			return err
		}
		h.mu.Lock()
		rank := h.avail.below(v.Priority)
		h.avail.add(v.Priority, -1)
		window := h.changes.Load() - before
		h.changes.Add(1)
		if i >= opt.warmup {
			h.record(rank, window)
		}
		h.mu.Unlock()

		// A new value rather than a write to v: the scheduler may still read
		// the old one until Update has replaced it.
		next := &worker{ID: v.ID, Priority: rng.IntN(priorityRange)}
		if err := h.s.Update(next); err != nil {
			return err
		}
		h.mu.Lock()
		err = h.s.Release(v.ID)
		if err == nil {
			h.avail.add(next.Priority, 1)
			h.changes.Add(1)
		}
		h.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// record adds one measured acquisition; h.mu is held.
func (h *rankHarness) record(rank int, window uint64) {
	r := &h.result
	r.n++
	r.sum += int64(rank)
	r.max = max(r.max, rank)
	r.counts[rank]++
	r.window += int64(window)
}
