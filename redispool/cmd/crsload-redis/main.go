// Command crsload-redis is the crs load-test harness, crsload, with one
// more pool: with -redis ADDR, the workers compete for a redispool pool
// kept in Redis, which several crsload-redis processes may share. Every
// other flag, the scenarios, the report, the output streams and the exit
// statuses are those of the root module's cmd/crsload (this module has
// the Redis client, which the root module may not depend on; the harness
// itself is github.com/crsched/crs/harness/loadtest), with one more exit
// status: 3, with one line on stderr, when the Redis of -redis cannot be
// reached (the client's own logging is silenced). It has a name of its
// own so that installing both commands keeps both.
//
//	cd redispool
//	go run ./cmd/crsload-redis -redis 127.0.0.1:6379      # about 12 s: 200 workers, 4 resources
//	go run ./cmd/crsload-redis -redis 127.0.0.1:6379 -scenario cooldown
//	go run ./cmd/crsload-redis -h                         # every flag
//
// Without -redis it runs the in-process scheduler, as cmd/crsload does.
//
// # The pool in Redis
//
// Resources are backend-01 to backend-NN of pool -redis-pool (default
// "crsload"), with capacity -capacity under -policy exclusive and
// redispool.MaxCapacity under -policy shared (any number of holders). A
// request is Acquire, the simulated call, then Lease.Release, or
// Lease.Cooldown(-cooldown) when a cooldown is set; after a failed call,
// -suspend first suspends the resource with Pool.Suspend. With -eject a
// failed call's lease ends with Lease.Fail, which counts the failure
// toward the pool's Options.Ejection (-eject failures in a row, with
// -eject-base, -eject-max and -eject-share, kept in Redis for every
// process): the failure scenario's 5 in a row apply, as they do for the
// scheduler under -api lease. Fail takes no cooldown, so with -cooldown a
// failed call's cooldown is a Pool.Suspend just before it. The pool hands
// out the lowest priority (all equal), then the fewest holders, then the
// smallest ID, and every acquisition is a lease: -strategy, -heaps,
// -ordering, -events, -event-queue and -api acquire, which only the
// in-process scheduler reads, are refused. Leases last redispool's default LeaseTTL, 30 s: a
// backend call longer than that loses its lease, which the accounting
// reports (a failed release, an expired lease).
//
// Each request costs at least two Redis round trips, and a Redis serves
// them one at a time: the default is at most 200 workers (unless
// -workers is given; the cooldown scenario keeps its 8), so that the
// default latencies (uniform 20-500 ms) load Redis with about 1,500
// scripts a second rather than measure a queue.
//
// # Several processes on one pool
//
// Start them together, with the same -redis and -redis-pool (and the same
// -resources, -policy, -capacity and ejection: a process that disagrees
// with the pool's first one is refused). Each process adds the resources,
// ignoring ErrDuplicateKey, so whichever comes first creates them, and
// registers in a session hash of its own, {POOL}:crsload (running,
// joined, left; it expires a few minutes after the last change). At the
// end of its run a process leaves the session and waits, -redis-wait at
// most, until no process is running any more: only then are the pool's
// figures final for everyone. Each then ends the suspensions still
// running (Include), reads the pool's Stats (no lease, every resource
// available, no lease expired since it started) and checks its own
// counts; the last process to finish removes the resources, which leaves
// no key of the pool behind but the request records, which expire, and
// the last fencing token, which stays, and deletes the session hash. A process
// that cannot see the others finish (one was killed) fails its pool
// check; the session hash then expires by itself and the pool's
// resources stay for the next run to reuse.
//
// # The llm scenario
//
// With -scenario llm, the keys are resources key-01 to key-NN of the pool
// (never the keys themselves, which are secrets), with -rpm and -tpm as
// their Limits, kept in Redis for every process. Each process Syncs them
// rather than adding them, so that keys a killed run left behind take
// this run's limits (and any other resource of the pool goes). Each attempt is
// Acquire WithCost its token estimate; a 200 settles the lease to the
// usage (Lease.Settle) after feeding the provider's figures back
// (Lease.Observe), as loadtest.Feedback says, a 429
// rests the key for its retry-after in every process (Lease.Cooldown),
// any other answer ends the lease as a failure (Lease.Fail). -provider
// URL and -keys are required: the processes share one provider as they
// share its keys, for example one cmd/mockprovider started apart, whose
// counters -provider-stats reads once every process has finished, for
// the provider's view of all their calls. The session, the end-of-run
// wait and the pool checks are as above; the client adds its own: no
// key's budget in debt (Pool.Remaining) and every served call settled.
// bench/scripts/llm-redis.sh runs the whole thing on loopback.
//
// The report is the harness's, with these differences: redispool has no
// events, no count of cancelled waits and no health totals, so those
// checks are skipped (the report says so); its Stats are pool-wide
// (the leases of every process) except Waiters, which counts this
// process's; and "no acquisition within a cooldown" allows 1 ms, as Redis
// keeps suspensions in whole milliseconds.
package main

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/crsched/crs/harness/loadtest"
)

func main() {
	// The Redis client logs its connection failures on its own; the
	// command says what failed, in one line.
	redis.SetLogger(quietLogger{})
	// SIGINT or SIGTERM ends the run early; the report covers what ran and
	// says so, and the exit status is 130 or 143. A second signal quits
	// at once (the end of a run may wait for other processes on the pool).
	ctx, stop := loadtest.NotifyContext(context.Background())
	code := loadtest.MainWith(ctx, os.Args[1:], os.Stdout, os.Stderr, redisExtension(os.Stderr))
	stop()
	os.Exit(code)
}

// quietLogger is the Redis client's logger: it logs nothing.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
