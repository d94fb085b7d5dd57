package loadtest

import (
	"math"

	"github.com/crsched/crs/config"
)

// Limit is the throughput a perfect pool on a perfect runtime would reach
// for the workload: the yardstick the measured throughput is divided by.
type Limit struct {
	PerSecond float64 `json:"per_second"`
	// Bottleneck is "workers" when the limit is the workers' pace (each
	// does one request per mean latency, back to back), "pool" when it is
	// the resources' (slots / (mean hold + cooldown)), and "none" when
	// nothing bounds the rate (backend calls that take no time, and no
	// cooldown): PerSecond is then 0 and the report gives no ratio.
	Bottleneck string `json:"bottleneck"`
	// MeanWorkers is the number of workers running, averaged over the
	// measured window. A worker runs from its start until its last request
	// ends, so a burst's surge counts until its last call is done, which
	// is when its work stops.
	MeanWorkers float64 `json:"mean_workers"`
	// MeanHoldNanos is the mean time a request holds its resource, from
	// the latency distribution (a cancelled call is cut short half-way on
	// average).
	MeanHoldNanos int64 `json:"mean_hold_ns"`
}

// theoreticalLimit is the lesser of the workers' rate and the pool's.
//
// The workers' rate is workers / mean latency: a worker does one request
// after another, and a request can take no less than its backend call.
// Under the Shared policy the pool never limits: a resource takes any
// number of holders. Under Exclusive, each of resources x capacity slots
// serves one request per mean hold plus cooldown (exact with capacity 1;
// with more, a cooldown rests the whole resource and the figure is
// optimistic). Suspensions after failures are not modelled: they show as
// a lower ratio, which is their cost. Abandoned requests are not
// completions, so they come off the limit.
//
// latency is the backend call's mean: the distribution's for the
// theoretical limit, or the measured one to ask how close the pool came
// given the calls as they actually ran (see Throughput.AsRun).
func theoreticalLimit(cfg Config, latency float64, workerNanos int64, window [2]int64) Limit {
	hold := latency * (1 - cfg.CancelRate/2)
	length := float64(window[1] - window[0])
	lim := Limit{Bottleneck: "none", MeanHoldNanos: int64(hold)}
	if length > 0 {
		lim.MeanWorkers = float64(workerNanos) / length
	}
	// Calls that take no time put no bound on the workers' pace; only
	// the pool's rests can bound the rate, and without them nothing does.
	rate := math.Inf(1)
	if hold > 0 {
		rate, lim.Bottleneck = lim.MeanWorkers/(hold/1e9), "workers"
	}
	if cycle := hold + float64(cfg.Cooldown); cfg.Policy == config.Exclusive && cycle > 0 {
		slots := float64(cfg.Resources * cfg.Capacity)
		if poolRate := slots / (cycle / 1e9); poolRate < rate {
			rate, lim.Bottleneck = poolRate, "pool"
		}
	}
	if lim.Bottleneck == "none" {
		return lim
	}
	lim.PerSecond = rate * (1 - cfg.CancelRate)
	return lim
}

// overlap is the length of [from, to) inside the window.
func overlap(from, to int64, w [2]int64) int64 {
	return max(0, min(to, w[1])-max(from, w[0]))
}
