package loadtest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// A request must not allocate: at 40,000 requests a second, garbage makes
// GC cycles whose stack scans of ten thousand goroutines show up in the
// very latencies the harness measures.
func TestARequestAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	for _, v := range variants {
		cfg := v.apply(quick(Normal))
		cfg.Events = false
		cfg.Latency = Latency{Kind: "fixed"} // no sleep: the request's own cost only
		var allocs float64
		switch v.pool {
		case "crs":
			p, err := newCRSPool(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			allocs = requestAllocs(cfg, pool[crsHandle](p))
			p.close()
		default:
			allocs = requestAllocs(cfg, pool[mutexHandle](newMutexPool(cfg)))
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per request", v, allocs)
		}
	}
}

func requestAllocs[H any](cfg Config, p pool[H]) float64 {
	e := &engine[H]{cfg: cfg, pool: p, k: newCounters(cfg.Resources), epoch: time.Now()}
	e.window = [2]int64{0, int64(time.Hour)}
	e.windowEnd.Store(e.window[1])
	ctx := context.Background()
	var acq deadlineCtx
	var h H
	rng := rand.New(rand.NewPCG(1, 1))
	return testing.AllocsPerRun(1000, func() { e.request(ctx, &acq, &h, rng) })
}

func TestAWorkerThatFirstRunsAfterItsStopMakesNoRequestUnlessNoneWasMade(t *testing.T) {
	cfg := quick(Normal)
	cfg.Pool = "mutex"
	e := newEngine[mutexHandle](cfg, newMutexPool(cfg))
	e.epoch = time.Now()
	e.window = [2]int64{0, int64(time.Hour)}
	e.windowEnd.Store(e.window[1])
	// A cohort whose stop has passed by the time its workers first run,
	// as on a machine too busy to run them all before it.
	c := &cohort{workers: 3, gate: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	defer c.cancel(nil)
	close(c.gate)
	for id := range 3 {
		e.runWorker(c, id)
	}
	if n := e.k.attempts.Load(); n != 1 {
		t.Fatalf("%d requests after the stop, want the run's first alone", n)
	}
}
