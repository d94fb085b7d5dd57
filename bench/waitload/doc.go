// Package waitload measures pools under the load where waiting dominates:
// many goroutines (10,000 by default) compete for a few exclusive
// resources (4), each request acquiring one, holding it for a fixed time
// and releasing it.
//
// Under that load the pool is idle almost all the time and a good pool is
// invisible: every resource goes from one holder to the next with no gap,
// so throughput reaches resources / hold time. What differs between pools
// is the gap (the hand-off latency), the CPU spent per request on queueing
// and waking, whether waiters are served in order, and whether anything is
// left running afterwards. Run puts the same workload through each pool in
// turn and reports those figures; it asserts nothing about speed, which
// is the reader's business (see cmd/waitload).
//
// The harness keeps its own bookkeeping cheap and off any lock the pools
// use: a few clock readings and per-resource atomics per request, so that
// what it measures is the pool and the Go runtime, not itself.
package waitload
