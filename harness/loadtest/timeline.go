package loadtest

import (
	"time"
)

// Sample is the state of a run at one moment, for the throughput chart
// and the live status line.
type Sample struct {
	T          float64 `json:"t_s"`          // seconds since the start
	Completed  uint64  `json:"completed"`    // backend calls done so far (successes and failures)
	Errors     uint64  `json:"errors"`       // acquire failures, timeouts and release failures so far
	Backend    uint64  `json:"backend_fail"` // backend failures so far
	Throughput float64 `json:"throughput"`   // completions per second since the previous sample
	Workers    int64   `json:"workers"`      // workers running
	Unfinished int64   `json:"unfinished"`   // workers not yet returned, whether started or not
	InFlight   int64   `json:"in_flight"`    // requests in progress
	Waiting    int64   `json:"waiting"`      // requests inside the acquire call
	Holding    int64   `json:"holding"`      // acquisitions not yet released
}

// sampler records a Sample at a fixed interval, and passes every sample to
// the live status display, which prints at its own pace.
type sampler struct {
	done    chan struct{}
	exited  chan []Sample
	samples []Sample
}

// sampleInterval gives about 600 points whatever the run's length, and
// never fewer than 10 a second.
func sampleInterval(total time.Duration) time.Duration {
	return max(total/600, 100*time.Millisecond).Truncate(10 * time.Millisecond)
}

func startSampler[H any](e *engine[H], plan []*cohort, progress *Progress) *sampler {
	s := &sampler{done: make(chan struct{}), exited: make(chan []Sample, 1)}
	total := time.Duration(plan[0].stop)
	interval := sampleInterval(total)
	s.samples = make([]Sample, 1, int(total/interval)+16)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.take(e)
				if progress != nil {
					progress.update(s.samples[len(s.samples)-1], total)
				}
			case <-s.done:
				s.take(e)
				if progress != nil {
					progress.finish()
				}
				s.exited <- s.samples
				return
			}
		}
	}()
	return s
}

func (s *sampler) take(e interface{ sample() Sample }) {
	cur := e.sample()
	prev := s.samples[len(s.samples)-1]
	if dt := cur.T - prev.T; dt > 0 {
		cur.Throughput = float64(cur.Completed-prev.Completed) / dt
	}
	s.samples = append(s.samples, cur)
}

// stop takes a last sample and returns them all.
func (s *sampler) stop() []Sample {
	close(s.done)
	return <-s.exited
}

func (e *engine[H]) sample() Sample {
	k := e.k
	return Sample{
		T:          time.Duration(e.now()).Seconds(),
		Completed:  k.success.Load() + k.backendFail.Load(),
		Errors:     k.acquireFail.Load() + k.timeouts.Load() + k.releaseFail.Load(),
		Backend:    k.backendFail.Load(),
		Workers:    k.workersAlive.load(),
		Unfinished: k.unfinished.Load(),
		InFlight:   k.inflight.load(),
		Waiting:    k.waiting.load(),
		Holding:    k.holding.load(),
	}
}
