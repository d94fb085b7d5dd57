package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/harness/loadtest"
	"github.com/crsched/crs/redispool"
)

// opTimeout bounds each call the pool makes outside a request: a release,
// a suspension, and the setup and end of the run.
const opTimeout = 5 * time.Second

// redisPool is the load test's pool: backend-01 to backend-NN of a
// redispool pool, shared with the other crsload processes of its session.
type redisPool struct {
	cfg     loadtest.Config
	client  *redis.Client
	pool    *redispool.Pool
	session *session
	// resources are the pool's, as this process adds them; ids their IDs,
	// and index the position of each ID.
	resources []redispool.Resource
	ids       []string
	index     map[string]int
	log       io.Writer
	// expired is the pool's ExpiredLeases when this process started.
	expired int64
	// others is how many other processes had joined the session when
	// this one saw them all finish; finishErr why it could not.
	others    int
	finishErr error

	fails, suspends, cooldowns, includes atomic.Uint64
}

// openPool connects, joins the pool's session and adds the resources
// backend-01 to backend-NN; the end of ctx (a signal) stops it.
func openPool(ctx context.Context, cfg loadtest.Config, f redisFlags, log io.Writer) (*redisPool, error) {
	capacity := cfg.Capacity
	if cfg.Policy == config.Shared {
		capacity = redispool.MaxCapacity // any number of holders
	}
	rs := make([]redispool.Resource, cfg.Resources)
	for i := range rs {
		rs[i] = redispool.Resource{ID: fmt.Sprintf("backend-%02d", i+1), Capacity: capacity}
	}
	return openPoolOf(ctx, cfg, f, log, rs, "")
}

// openPoolOf opens the pool of resources rs; shape adds to what the
// processes of a session must agree on.
func openPoolOf(ctx context.Context, cfg loadtest.Config, f redisFlags, log io.Writer, rs []redispool.Resource, shape string) (*redisPool, error) {
	client := redis.NewClient(&redis.Options{
		Addr:                  f.addr,
		ContextTimeoutEnabled: true,
		// Enough connections that the workers do not queue for one.
		PoolSize: max(10*runtime.GOMAXPROCS(0), min(cfg.Workers, 256)),
	})
	// A server that does not answer is told apart from a failed run: the
	// command exits 3, with one line.
	if err := withTimeout(ctx, func(ctx context.Context) error { return client.Ping(ctx).Err() }); err != nil {
		_ = client.Close()
		if ctx.Err() == nil {
			err = fmt.Errorf("%s %w: %w", f.addr, loadtest.ErrUnreachable, err)
		}
		return nil, err
	}
	opts := redispool.Options{Name: f.name}
	if cfg.Eject > 0 {
		opts.Ejection = config.Ejection{
			ConsecutiveFailures: cfg.Eject,
			BaseTime:            cfg.EjectBase,
			MaxTime:             cfg.EjectMax,
			MaxEjectedShare:     cfg.EjectShare,
		}
	}
	pool, err := redispool.New(client, opts)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	p := &redisPool{
		cfg:       cfg,
		client:    client,
		pool:      pool,
		session:   newSession(client, f.name, f.wait, cfg, shape),
		resources: rs,
		ids:       make([]string, len(rs)),
		index:     make(map[string]int, len(rs)),
		log:       log,
	}
	for i, r := range rs {
		p.ids[i] = r.ID
		p.index[r.ID] = i
	}
	if err := p.start(ctx); err != nil {
		_ = pool.Close()
		_ = client.Close()
		return nil, err
	}
	return p, nil
}

// start joins the session and adds the resources, unless another process
// of the session has: the first one creates them. Each call has its own
// timeout, so that a large pool has time to go in, and the end of ctx (a
// signal) stops it.
func (p *redisPool) start(ctx context.Context) error {
	if err := p.session.join(ctx); err != nil {
		return err
	}
	err := func() error {
		if len(p.resources) > 0 && len(p.resources[0].Limits) > 0 {
			// The llm keys: a run killed before its end left them with its
			// limits, which this session's (its shape) may not be; Sync
			// sets them, keeping the buckets' levels.
			if err := withTimeout(ctx, func(ctx context.Context) error { return p.pool.Sync(ctx, p.resources) }); err != nil {
				return err
			}
		} else {
			for _, r := range p.resources {
				err := withTimeout(ctx, func(ctx context.Context) error { return p.pool.Add(ctx, r) })
				if err != nil && !errors.Is(err, crserrors.ErrDuplicateKey) {
					return err
				}
			}
		}
		var st redispool.Stats
		err := withTimeout(ctx, func(ctx context.Context) (err error) {
			st, err = p.pool.Stats(ctx)
			return err
		})
		if err != nil {
			return err
		}
		if st.Resources != len(p.ids) {
			return fmt.Errorf("pool %q has %d resources, not %d: left by an earlier run with other settings? Use another -redis-pool, or remove them",
				p.pool.Name(), st.Resources, len(p.ids))
		}
		p.expired = st.ExpiredLeases
		return nil
	}()
	if err != nil {
		p.session.abandon()
	}
	return err
}

// withTimeout calls f with ctx bounded by opTimeout.
func withTimeout(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return f(ctx)
}

// lease is one acquisition: a redispool lease.
type lease struct {
	p     *redisPool
	l     *redispool.Lease
	index int
}

func (p *redisPool) Acquire(ctx context.Context) (loadtest.Acquisition, error) {
	l, err := p.pool.Acquire(ctx)
	if err != nil {
		// A wait cut short by ctx may end as the connection's I/O
		// timeout rather than as ctx's error: say it was ctx's.
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		return nil, err
	}
	i, ok := p.index[l.ID]
	if !ok {
		rctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		return nil, errors.Join(fmt.Errorf("the pool handed out %q, not one of this run's resources", l.ID), l.Release(rctx))
	}
	return &lease{p: p, l: l, index: i}, nil
}

func (a *lease) Resource() int { return a.index }

// End releases the lease: with a cooldown, Lease.Cooldown rests the
// resource in the same step; after a failure, -suspend first suspends it
// (a leased resource takes no new lease, and rests once its leases end).
// With -eject a failure ends the lease with Lease.Fail, which counts it
// toward the pool's Ejection; Fail takes no cooldown, so a cooldown is
// then a suspension started just before (the resource rests from that
// moment, which the harness's check of cooldowns, timed from the end of
// the call, allows). The request's context may have ended (its client
// gave up): releasing does not depend on it.
func (a *lease) End(failed bool) error {
	p := a.p
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var suspendErr, coolErr error
	if failed && p.cfg.Suspend > 0 {
		if suspendErr = p.pool.Suspend(ctx, a.l.ID, p.cfg.Suspend); suspendErr == nil {
			p.suspends.Add(1)
		}
	}
	var err error
	switch {
	case failed && p.cfg.Eject > 0:
		if p.cfg.Cooldown > 0 {
			if coolErr = p.pool.Suspend(ctx, a.l.ID, p.cfg.Cooldown); coolErr == nil {
				p.cooldowns.Add(1)
			}
		}
		if err = a.l.Fail(ctx); err == nil {
			p.fails.Add(1)
		}
	case p.cfg.Cooldown > 0:
		if err = a.l.Cooldown(ctx, p.cfg.Cooldown); err == nil {
			p.cooldowns.Add(1)
		}
	default:
		err = a.l.Release(ctx)
	}
	return errors.Join(err, suspendErr, coolErr)
}

// Finish closes this process's handle (which waits for leases being given
// back in the background), leaves the session and waits for its other
// processes to finish, then ends the suspensions still running. A
// resource still leased then is an accounting error, unless a process's
// Close said that a give-back could not reach the server in time: that
// lease stays until its deadline, and the error says so.
func (p *redisPool) Finish() error {
	if err := p.pool.Close(); err != nil {
		if !errors.Is(err, redispool.ErrGiveBackUnfinished) {
			return fmt.Errorf("closing the pool: %w", err)
		}
		if rerr := p.session.giveBackUnfinished(); rerr != nil {
			fmt.Fprintf(p.log, "crsload-redis: %v; recording it in the session: %v\n", err, rerr)
		}
	}
	others, err := p.session.leave(p.log)
	p.others = others
	if err != nil {
		p.finishErr = err
		return err // others may still run: leave their rests alone
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, id := range p.ids {
		err := p.pool.Include(ctx, id)
		switch {
		case err == nil:
			p.includes.Add(1)
		case errors.Is(err, crserrors.ErrResourceNotInactive):
			// neither excluded nor suspended: nothing to end
		case errors.Is(err, crserrors.ErrResourceNotExcluded):
			// still leased, though every process has finished
			n, rerr := p.session.unfinishedGiveBacks()
			if rerr != nil {
				return errors.Join(fmt.Errorf("include %s at the end: %w", id, err), rerr)
			}
			if n > 0 {
				return fmt.Errorf("include %s at the end: still leased, not an accounting error: %s of this pool could not give back a lease in time (the server was not reached; the lease ends at its deadline): %w",
					id, processes(n, ""), err)
			}
			return fmt.Errorf("include %s at the end: still leased after every process finished: %w", id, err)
		default:
			return fmt.Errorf("include %s at the end: %w", id, err)
		}
	}
	return nil
}

// State reads the pool's Stats. Leases, resources and their states are
// the pool's, over every process; Waiters counts this process's.
func (p *redisPool) State() (loadtest.PoolState, error) {
	calls := loadtest.HealthCalls{Fails: p.fails.Load(), Suspends: p.suspends.Load(), Cooldowns: p.cooldowns.Load(), Includes: p.includes.Load()}
	if p.finishErr != nil {
		// Finish's error fails the accounting; the figures are not final.
		return loadtest.PoolState{Calls: calls}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	st, err := p.pool.Stats(ctx)
	if err != nil {
		return loadtest.PoolState{Calls: calls}, err
	}
	shared := "this process alone"
	if p.others > 0 {
		shared = processes(p.others+1, "") + ", all finished before the checks"
	}
	return loadtest.PoolState{
		HoldsTracked: true,
		Holders:      st.Leases,
		Waiters:      st.Waiters,
		Active:       st.Available,
		Total:        st.Resources,
		Draining:     st.Draining,
		Excluded:     st.Excluded,
		Suspended:    st.Suspended,
		Calls:        calls,
		Checks: []loadtest.Check{{
			Name:   "no lease expired",
			OK:     st.ExpiredLeases == p.expired,
			Detail: fmt.Sprintf("the pool's expired leases: %d at the start, %d at the end; %s", p.expired, st.ExpiredLeases, shared),
		}},
	}, nil
}

// Close leaves the session for good; the last process out removes the
// resources, so that the pool leaves no key behind but its request
// records, which expire by themselves, and its last fencing token, which
// stays so that the pool's tokens never go back.
func (p *redisPool) Close() {
	defer p.client.Close()
	last, err := p.session.done()
	if err != nil {
		fmt.Fprintf(p.log, "crsload-redis: leaving the session of pool %q: %v\n", p.pool.Name(), err)
		return
	}
	if !last {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, id := range p.ids {
		if err := p.pool.Remove(ctx, id); err != nil && !errors.Is(err, crserrors.ErrResourceNotFound) {
			fmt.Fprintf(p.log, "crsload-redis: removing %s from pool %q: %v\n", id, p.pool.Name(), err)
		}
	}
	if err := p.session.close(); err != nil {
		fmt.Fprintf(p.log, "crsload-redis: deleting the session of pool %q: %v\n", p.pool.Name(), err)
	}
}

// session is the set of crsload processes running on one pool, kept in
// the hash {POOL}:crsload: running (processes between join and leave),
// joined and left (since the session began), shape (the resources every
// process must agree on), givebacks (processes whose pool's Close could
// not give back every lease in time), closing (the last process is removing the
// resources: a process joining then waits for a new session).
type session struct {
	client *redis.Client
	key    string
	shape  string
	ttl    time.Duration // of the hash, refreshed by every change
	wait   time.Duration
}

func newSession(client *redis.Client, pool string, wait time.Duration, cfg loadtest.Config, more string) *session {
	capacity := "shared"
	if cfg.Policy == config.Exclusive {
		capacity = "capacity " + strconv.Itoa(cfg.Capacity)
	}
	if cfg.Eject > 0 {
		// Every process of a pool must use the same Ejection.
		capacity += fmt.Sprintf(", eject after %d failures for %v (at most %v, %v of the pool)", cfg.Eject, cfg.EjectBase, cfg.EjectMax, cfg.EjectShare)
	}
	if more != "" {
		capacity += ", " + more
	}
	return &session{
		client: client,
		key:    "{" + pool + "}:crsload",
		shape:  fmt.Sprintf("%d resources, %s", cfg.Resources, capacity),
		ttl:    cfg.Warmup + cfg.Duration + wait + 2*time.Minute,
		wait:   wait,
	}
}

// The session's scripts: each change is one atomic step on the server,
// and refreshes the hash's expiry (never shortening it).
var (
	scriptJoin = redis.NewScript(`
local s = KEYS[1]
if redis.call('HGET', s, 'closing') then return {0, ''} end
local shape = redis.call('HGET', s, 'shape')
if shape and shape ~= ARGV[1] then return {-1, shape} end
redis.call('HSET', s, 'shape', ARGV[1])
redis.call('HINCRBY', s, 'running', 1)
redis.call('HINCRBY', s, 'joined', 1)
if redis.call('PTTL', s) < tonumber(ARGV[2]) then redis.call('PEXPIRE', s, ARGV[2]) end
return {1, ''}`)
	scriptLeave = redis.NewScript(`
local s = KEYS[1]
local n = redis.call('HINCRBY', s, 'running', -1)
if redis.call('PTTL', s) < tonumber(ARGV[1]) then redis.call('PEXPIRE', s, ARGV[1]) end
return n`)
	scriptDone = redis.NewScript(`
local s = KEYS[1]
local left = redis.call('HINCRBY', s, 'left', 1)
local joined = tonumber(redis.call('HGET', s, 'joined') or '0')
if left >= joined then
  redis.call('HSET', s, 'closing', '1')
  return 1
end
return 0`)
)

// join registers this process; a session being closed is waited out (10 s
// at most), unless ctx ends first (a signal).
func (s *session) join(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var r []any
		err := withTimeout(ctx, func(ctx context.Context) (err error) {
			r, err = scriptJoin.Run(ctx, s.client, []string{s.key}, s.shape, s.ttl.Milliseconds()).Slice()
			return err
		})
		if err != nil {
			return fmt.Errorf("joining the session %s: %w", s.key, err)
		}
		status, _ := r[0].(int64)
		switch {
		case status == 1:
			return nil
		case status < 0:
			return fmt.Errorf("the crsload processes running on this pool have %v; this one has %s", r[1], s.shape)
		case time.Now().After(deadline):
			return fmt.Errorf("the session %s is still closing after 10 s", s.key)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the session %s to close: %w", s.key, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// leave ends this process's run in the session and waits until no process
// of it runs any more. It returns how many other processes joined.
func (s *session) leave(log io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	err := scriptLeave.Run(ctx, s.client, []string{s.key}, s.ttl.Milliseconds()).Err()
	cancel()
	if err != nil {
		return 0, fmt.Errorf("leaving the session %s: %w", s.key, err)
	}
	deadline := time.Now().Add(s.wait)
	told := false
	for {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		v, err := s.client.HMGet(ctx, s.key, "running", "joined").Result()
		cancel()
		if err != nil {
			return 0, fmt.Errorf("reading the session %s: %w", s.key, err)
		}
		running, joined := atoi(v[0]), atoi(v[1])
		if running <= 0 {
			return max(0, joined-1), nil
		}
		if time.Now().After(deadline) {
			return joined - 1, fmt.Errorf("%s on this pool still running %v after this one: the pool's figures are not final (-redis-wait)",
				processes(running, "other "), s.wait)
		}
		if !told && log != nil {
			fmt.Fprintf(log, "crsload-redis: waiting for %s on this pool to finish (-redis-wait %v)\n", processes(running, "other "), s.wait)
			told = true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// giveBackUnfinished records that this process's Close could not give
// back every lease whose grant was lost (redispool.ErrGiveBackUnfinished).
func (s *session) giveBackUnfinished() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return s.client.HIncrBy(ctx, s.key, "givebacks", 1).Err()
}

// unfinishedGiveBacks is how many processes of the session recorded
// giveBackUnfinished.
func (s *session) unfinishedGiveBacks() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	v, err := s.client.HGet(ctx, s.key, "givebacks").Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// abandon undoes a join whose process does not run after all, waiting
// for no one; if it was the session's only process, the session goes
// (the pool's resources stay, for the error to be looked into).
func (s *session) abandon() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if scriptLeave.Run(ctx, s.client, []string{s.key}, s.ttl.Milliseconds()).Err() != nil {
		return
	}
	if last, err := s.done(); err == nil && last {
		_ = s.close()
	}
}

// done records that this process has made its checks, and reports whether
// it is the session's last: the one that removes the resources, then
// deletes the session.
func (s *session) done() (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n, err := scriptDone.Run(ctx, s.client, []string{s.key}).Int()
	return n == 1, err
}

func (s *session) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return s.client.Del(ctx, s.key).Err()
}

// processes says "1 other crsload process", "2 other crsload processes".
func processes(n int, other string) string {
	if n == 1 {
		return "1 " + other + "crsload process"
	}
	return strconv.Itoa(n) + " " + other + "crsload processes"
}

// atoi reads a hash field as an int; a missing one is 0.
func atoi(v any) int {
	s, _ := v.(string)
	n, _ := strconv.Atoi(s)
	return n
}
