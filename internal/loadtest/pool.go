package loadtest

import "context"

// pool is what the harness drives: the crs scheduler, or the baseline
// that -compare measures it against. H is the pool's handle for one
// acquisition. Each worker keeps one H for all its requests and passes its
// address: a handle passed by address through an interface escapes, and
// one per request would be garbage the GC must chase, at 40,000 requests
// a second enough to start a cycle every few seconds (it did, and its
// stack scans of ten thousand goroutines showed up as acquire latency).
type pool[H any] interface {
	// acquire waits for a resource until ctx ends, fills in h and returns
	// the resource's index in [0, Resources).
	acquire(ctx context.Context, h *H) (int, error)
	// end releases the acquisition exactly once. failed says the backend
	// call failed; the pool then applies its failure handling (a
	// suspension, if configured). Every release starts the configured
	// cooldown.
	end(h *H, failed bool) error
	// settle ends every rest (cooldown or suspension) still pending, once
	// the workers have stopped, so that the final check sees every
	// resource back in the pool.
	settle()
	// state reads the pool's own counters, for the accounting check.
	state() poolState
	close()
}

// poolState is a pool's view of itself at the end of a run.
type poolState struct {
	Holders   int // holds outstanding
	Waiters   int // callers waiting
	Active    int // resources acquirable
	Total     int // resources in the pool, whatever their state
	Draining  int
	Excluded  int
	Cancelled uint64 // waits ended by their context, as the pool counts them
	// Rests counts the pool's own cooldown and suspension operations, to
	// check against its events.
	Rests restCounts
	// Events is nil when the pool reports no events, and Dropped how many
	// it could not deliver.
	Events  *eventCounts
	Dropped uint64
	// HoldsTracked: the pool counts a holder per acquisition and an event
	// per release (false for shared acquisitions without a lease, which
	// hold nothing).
	HoldsTracked bool
}

// restCounts are the lifecycle calls the harness made to rest resources
// with the scheduler's current API (see health_crs.go).
type restCounts struct {
	Excludes, Includes, Removes, ReAdds uint64
}

// eventCounts are the events an observer saw, by type.
type eventCounts struct {
	Add, Acquire, Release, Exclude, Include, Remove uint64
}
