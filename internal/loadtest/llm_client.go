package loadtest

import (
	"context"
	"sync/atomic"
	"time"
)

// llmClient is how the llm scenario's calls get their API key: the crs
// scheduler (llm_crs.go) or the naive round robin (naiveClient). A client
// on a pool shared by several processes (redispool) would be a third.
// Its methods are called from many workers at once.
type llmClient interface {
	// pick waits until the client lets call c go out and returns the
	// hold it goes out under. Its error wraps ctx's when ctx ended.
	pick(ctx context.Context, c llmCall) (llmHold, error)
	// finish runs once every worker has stopped: the client's own checks
	// for the accounting.
	finish() []Check
	close()
}

// llmHold is one attempt's key, from pick. Exactly one of its methods is
// called, once.
type llmHold interface {
	key() int // the key's index in the run's keys
	// served: the provider answered 200; a has its usage and headers.
	served(a llmAnswer) error
	// refused: a 429 with a retry-after. It returns how long the worker
	// waits before the next attempt (the client's own wait, if it keeps
	// none in its pool).
	refused(a llmAnswer) (time.Duration, error)
	// failed: any other answer, or none (a transport error): the call
	// ends without a retry.
	failed(a llmAnswer) error
	// unsent: the window ended between pick and the call, which is not
	// made.
	unsent() error
}

// naiveClient is what most gateways do: round robin over the keys, and
// after a 429, wait its retry-after and try the next key. It keeps no
// count of what a key has spent.
type naiveClient struct {
	keys int
	next atomic.Uint64
}

func newNaiveClient(keys int) *naiveClient { return &naiveClient{keys: keys} }

func (n *naiveClient) pick(ctx context.Context, _ llmCall) (llmHold, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return naiveHold(int((n.next.Add(1) - 1) % uint64(n.keys))), nil
}

func (n *naiveClient) finish() []Check { return nil }
func (n *naiveClient) close()          {}

type naiveHold int

func (h naiveHold) key() int                                   { return int(h) }
func (h naiveHold) served(llmAnswer) error                     { return nil }
func (h naiveHold) refused(a llmAnswer) (time.Duration, error) { return a.retryAfter, nil }
func (h naiveHold) failed(llmAnswer) error                     { return nil }
func (h naiveHold) unsent() error                              { return nil }
