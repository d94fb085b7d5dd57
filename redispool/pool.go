package redispool

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// Pool is a handle on a pool of resources kept in Redis. Every process
// (and every Pool value) opened with the same Options.Name on the same
// Redis shares one pool. All methods are safe for concurrent use.
type Pool struct {
	client  redis.UniversalClient
	name    string
	keys    [9]string // res, avail, leases, susp, req, token, queue, profiles, fair: see lua/prelude.lua
	done    string    // prefix of the keys that record write requests, done + request
	channel string    // prefix of the processes' channels, on which grants to waiters are told
	// channelArg is channel as a script argument, boxed once: each
	// boxing of a string is an allocation per call.
	channelArg any
	ttl        time.Duration
	ttlMs      int64
	recheck    time.Duration
	proc       string // this handle's id in the waiter queue: see hub
	clock      config.Clock
	ejection   config.Ejection
	// replicas (Options.WaitReplicas) > 0: grants and extensions wait
	// for that many replicas, up to waitFor, on the connection of the
	// write, which primary finds.
	replicas int
	waitFor  time.Duration
	primary  func(context.Context) (*redis.Client, error)
	// shareBy is Options.ShareBy in hex, as the scripts take it.
	shareBy string
	hub     *hub
	// bg counts what may still give a lease back: give-backs in the
	// background, and acquire commands in flight (whose caller may
	// leave before the grant arrives, which is then given back). Close
	// waits for it, for abandonTimeout at most. Add only under bgMu
	// while !bgClosed; giving is bg's count, for Close's error.
	bgMu     sync.Mutex
	bg       sync.WaitGroup
	bgClosed bool // Close is waiting for bg: no more Add
	giving   atomic.Int64
	// gaveUp counts give-backs that ran out of time: their leases stay
	// until their deadline.
	gaveUp atomic.Int64
	late   sync.WaitGroup // commands whose caller left before the reply
	closed atomic.Bool
	// wakeFailures counts grant messages the server refused (Stats).
	wakeFailures atomic.Int64
	hooks        hooks // set only by tests (export_test.go)
}

// hooks are the places where a test watches a Pool or shortens its
// waits; the zero value, outside tests, changes nothing. Tests set them
// while no call of the Pool runs, so they are read without a lock.
type hooks struct {
	// parked runs in wait when a waiter is about to block for the first
	// time, so that a test knows that it waits.
	parked func()
	// windowMs, if not 0, replaces RequestWindow for the records of
	// this Pool's later writes.
	windowMs int64
	// closeWait, if not 0, replaces abandonTimeout as the bound on
	// Close's wait for give-backs.
	closeWait time.Duration
}

// New returns a handle on the pool opts.Name of client. It sends
// nothing to Redis: the pool's keys appear with its first resource, and
// the scripts are loaded by their first use. The caller keeps ownership
// of client; Close the Pool before closing the client.
func New(client redis.UniversalClient, opts Options) (*Pool, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	tag := "{" + opts.Name + "}:"
	p := &Pool{
		client:   client,
		name:     opts.Name,
		keys:     [9]string{tag + "res", tag + "avail", tag + "leases", tag + "susp", tag + "req", tag + "token", tag + "queue", tag + "profiles", tag + "fair"},
		done:     tag + "done:",
		channel:  tag + "wake",
		ttl:      opts.LeaseTTL,
		ttlMs:    millis(opts.LeaseTTL),
		recheck:  opts.RecheckInterval,
		clock:    opts.Clock,
		ejection: opts.Ejection,
		replicas: opts.WaitReplicas,
		waitFor:  opts.WaitTimeout,
		shareBy:  hex.EncodeToString([]byte(opts.ShareBy)),
	}
	if p.replicas > 0 {
		// WAIT counts the replicas that have the writes of its own
		// connection: it must follow the script on the same one.
		switch c := client.(type) {
		case *redis.Client:
			p.primary = func(context.Context) (*redis.Client, error) { return c, nil }
		case *redis.ClusterClient:
			p.primary = func(ctx context.Context) (*redis.Client, error) { return c.MasterForKey(ctx, p.keys[0]) }
		default:
			return nil, fmt.Errorf("%w: with a %T (want *redis.Client or *redis.ClusterClient)", ErrInvalidReplicas, client)
		}
	}
	// The process id names this handle's channel: a grant handed to one
	// of its waiters is told to it alone.
	p.channelArg = p.channel
	p.proc = fmt.Sprintf("%016x", rand.Uint64())
	p.hub = newHub(client, p.channel+":"+p.proc)
	return p, nil
}

// ejectionArgs is the pool's Ejection as the fail script takes it.
func (p *Pool) ejectionArgs() []any {
	if p == nil || !p.ejection.Enabled() {
		return []any{0, 0, 0, 0}
	}
	e := p.ejection
	return []any{e.ConsecutiveFailures, millis(e.BaseTime), millis(e.MaxTime), strconv.FormatFloat(e.MaxEjectedShare, 'g', -1, 64)}
}

// Name is the pool's name.
func (p *Pool) Name() string { return p.name }

// Close stops this handle from acquiring: waiting Acquire calls and
// later Acquire or TryAcquire calls return ErrSchedulerClosed, and the
// subscription that woke waiters is closed. Everything else keeps
// working, so that a process shutting down can still release its leases
// (which other processes are waiting for). Close waits (5 s at most)
// for the give-back of leases whose grant was lost (see Acquire),
// acquire commands still in flight after their caller left included,
// so that closing the client after Close leaves no lease behind. If
// that wait runs out, or a give-back of this handle ran out of time
// earlier (Redis could not be reached), Close returns
// ErrGiveBackUnfinished: those leases end at their deadline unless a
// give-back still running gets through. Close does not touch the
// pool's state in Redis otherwise, nor close the client. It is
// idempotent: a second call returns nil.
func (p *Pool) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.hub.close()
	p.bgMu.Lock()
	p.bgClosed = true
	p.bgMu.Unlock()
	done := make(chan struct{})
	go func() {
		p.bg.Wait()
		close(done)
	}()
	wait := abandonTimeout
	if p.hooks.closeWait != 0 {
		wait = p.hooks.closeWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		return fmt.Errorf("redispool: close: %d still running after %v: %w", p.giving.Load(), wait, ErrGiveBackUnfinished)
	}
	if n := p.gaveUp.Load(); n > 0 {
		return fmt.Errorf("redispool: close: %d ran out of time: %w", n, ErrGiveBackUnfinished)
	}
	return nil
}

// abandonTimeout bounds the give-back of a lease whose grant was lost,
// and Close's wait for the give-backs still running.
const abandonTimeout = 5 * time.Second

// track counts one more thing that may give a lease back (see bg), and
// reports whether it did: not once Close waits.
func (p *Pool) track() bool {
	p.bgMu.Lock()
	defer p.bgMu.Unlock()
	if p.bgClosed {
		return false
	}
	p.bg.Add(1)
	p.giving.Add(1)
	return true
}

// untrack ends what track counted.
func (p *Pool) untrack() {
	p.giving.Add(-1)
	p.bg.Done()
}

func (p *Pool) errClosed(op string) error {
	return fmt.Errorf("redispool: %s: %w", op, crserrors.ErrSchedulerClosed)
}
