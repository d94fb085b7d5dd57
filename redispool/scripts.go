package redispool

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one server-side operation, callable two ways: as the
// function fn of the pool's FUNCTION library (Redis 7 and later: the
// library's helpers are defined once, when it is loaded), or as a
// script of its own, the library's helpers and this operation's body
// (older servers, by EVALSHA), so that each one is a single atomic
// step either way.
type script struct {
	name string
	fn   string // in the library
	// record: the server records the script's status under its request
	// (lua/epilogue.lua), so that the request sent again gets it.
	record bool
	// waits: with Options.WaitReplicas, a success waits for the
	// replicas (a grant, an extension: what exclusivity rests on).
	waits bool
	*redis.Script
}

func luaSource(file string) string {
	b, err := luaFiles.ReadFile("lua/" + file + ".lua")
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	return string(b)
}

// operations lists the library's operations, a lua file each.
var operations = []string{"acquire", "abandon", "release", "cooldown", "extend", "add", "update",
	"remove", "exclude", "include", "suspend", "sync", "synced", "stats", "settle", "fail", "remaining", "observe"}

// operation is the body of op as a function of the library.
func operation(op string) string {
	return "local function op_" + op + "()\n" + luaSource(op) + "\nend\n"
}

// helpers are the library's functions that every operation uses, in the
// order they must be defined (a Lua local is seen only after it).
var helpers = func() string {
	var b strings.Builder
	for _, file := range []string{"prelude", "resource", "bucket", "grant", "health", "lifecycle", "step", "epilogue"} {
		b.WriteString(luaSource(file))
		b.WriteString("\n")
	}
	return b.String()
}()

// libraryName and librarySource are the pool's FUNCTION library. The
// name carries a digest of the code, so that processes that run
// different versions of this package do not replace each other's.
var libraryName, librarySource = library()

func library() (name, source string) {
	var code strings.Builder
	code.WriteString(helpers)
	for _, op := range operations {
		code.WriteString(operation(op))
	}
	sum := sha1.Sum([]byte(code.String()))
	name = "crs_redispool_" + hex.EncodeToString(sum[:6])
	for _, op := range operations {
		fmt.Fprintf(&code, "redis.register_function('%s_%s', function(keys, argv) return %s end)\n", name, op, invocation(op))
	}
	return name, "#!lua name=" + name + "\n" + code.String()
}

func newScript(name string, record bool) script {
	return script{name: name, fn: libraryName + "_" + name, record: record, Script: redis.NewScript(
		"local keys, argv = KEYS, ARGV\n" + helpers + operation(name) + "return " + invocation(name) + "\n")}
}

// ownRepeats lists the operations that tell a repeat of their request
// by themselves: each ends a lease, so a repeat finds it gone, and only
// then reads the record (repeated in lua/prelude.lua).
var ownRepeats = map[string]bool{"release": true, "cooldown": true, "fail": true}

// invocation is the Lua expression that runs operation op for the
// call's keys and argv.
func invocation(op string) string {
	return fmt.Sprintf("call(op_%s, keys, argv, %t)", op, ownRepeats[op])
}

// The scripts, built once per process: the SHA-1 of each is computed
// here.
var (
	scriptAcquire  = waiting(newScript("acquire", false)) // REQ holds its lease
	scriptAbandon  = newScript("abandon", true)
	scriptRelease  = newScript("release", true)
	scriptCooldown = newScript("cooldown", true)
	scriptExtend   = waiting(newScript("extend", true))
	scriptAdd      = newScript("add", true)
	scriptUpdate   = newScript("update", true)
	scriptRemove   = newScript("remove", true)
	scriptExclude  = newScript("exclude", true)
	scriptInclude  = newScript("include", true)
	scriptSuspend  = newScript("suspend", true)
	scriptSync     = newScript("sync", true)
	scriptSynced   = newScript("synced", false)
	scriptStats    = newScript("stats", false)
	scriptSettle   = newScript("settle", true)
	scriptFail     = newScript("fail", true)
	scriptRemain   = newScript("remaining", false)
	scriptObserve  = newScript("observe", true)
)

func waiting(s script) script {
	s.waits = true
	return s
}

// call runs s on c: FCALL of its function, loading the library first if
// the server does not have it (its first use, or a server restarted
// without it), or, on a server without functions (before Redis 7, or
// an ACL that forbids them), the script by EVALSHA, and EVAL once when
// the server answers NOSCRIPT (go-redis's Script.Run). A call that the
// server refused that way ran nothing, so sending it again is safe.
func (p *Pool) call(ctx context.Context, c redis.Cmdable, s script, keys []string, argv []any) ([]any, error) {
	if !p.noFunctions.Load() {
		res, err := c.FCall(ctx, s.fn, keys, argv...).Slice()
		if !refused(err, "ERR Function not found") && !withoutFunctions(err) {
			return res, err
		}
		if !withoutFunctions(err) {
			err = loadLibrary(ctx, c, keys[0])
			if err == nil {
				res, err = c.FCall(ctx, s.fn, keys, argv...).Slice()
				cc, ok := c.(*redis.ClusterClient)
				if !ok || !refused(err, "ERR Function not found") {
					return res, err
				}
				// The slot has moved (a reshard) to a master that the
				// client's map did not show yet: it followed MOVED there,
				// but the library went to the old master.
				loadEveryMaster(ctx, cc)
				return c.FCall(ctx, s.fn, keys, argv...).Slice()
			}
			if !withoutFunctions(err) {
				return nil, err
			}
		}
		p.noFunctions.Store(true)
	}
	return s.Run(ctx, c, keys, argv...).Slice()
}

// loadLibrary loads the pool's library on c's server: on a Cluster, on
// the master of key's slot alone, which runs every call of the pool
// (its replicas get the library from it), so that another master that
// is down or refuses the library does not stop this pool. When the slot
// has moved, call loads it on every master (loadEveryMaster).
func loadLibrary(ctx context.Context, c redis.Cmdable, key string) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		return m.FunctionLoadReplace(ctx, librarySource).Err()
	}
	return c.FunctionLoadReplace(ctx, librarySource).Err()
}

// loadEveryMaster loads the pool's library on every master of the
// Cluster that takes it; the errors of those that do not are left to
// the FCALL that follows, which fails only if the slot's master is one.
func loadEveryMaster(ctx context.Context, cc *redis.ClusterClient) {
	_ = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		_ = m.FunctionLoadReplace(ctx, librarySource).Err()
		return nil
	})
}

// refused reports whether err is the server's error reply starting with
// prefix.
func refused(err error, prefix string) bool {
	var e redis.Error
	return errors.As(err, &e) && strings.HasPrefix(e.Error(), prefix)
}

// withoutFunctions reports whether err says that the server has no
// FUNCTION and FCALL commands, or does not let this client use them.
func withoutFunctions(err error) bool {
	return refused(err, "ERR unknown command") || refused(err, "NOPERM")
}

// Status codes, the first element of every script's reply (prelude.lua).
const (
	statusOK          = 1
	statusNone        = 0
	statusNotFound    = -1
	statusDuplicate   = -2
	statusDraining    = -3
	statusNotActive   = -4
	statusNotExcluded = -5
	statusNotInactive = -6
	statusEmpty       = -7
	statusExceeds     = -8
	statusUnknown     = -9
	statusQueued      = 2
)

// run calls s with the pool's keys and ARGV = channel, args...; it
// returns the reply after its status and wake-up report, or the
// status's sentinel (or the client's error), for the caller to wrap
// with the operation. A grant message that the server refused to
// publish is counted, not returned: the grant it told of was made.
//
// request (newRequest; "" for Stats, which writes nothing of its own)
// identifies the call: go-redis resends the same command, request
// included, when a connection breaks before the reply, and the server
// answers a resent write with the status it recorded for the request
// (for RequestWindow, in {NAME}:done:REQUEST), not by applying it
// again.
func (p *Pool) run(ctx context.Context, s script, request string, args ...any) (status int64, reply []any, err error) {
	argv := make([]any, 0, len(args)+4)
	argv = append(argv, p.channel)
	argv = append(argv, args...)
	record := 0
	if s.record && request != "" {
		record = 1
	}
	window := requestWindowMs
	if p.hooks.windowMs != 0 {
		window = p.hooks.windowMs
	}
	argv = append(argv, request, window, record)
	keys := append(p.keys[:len(p.keys):len(p.keys)], p.done+request)
	r := p.eval(ctx, s, request, keys, argv)
	if r.err != nil {
		return 0, nil, r.err
	}
	res := r.res
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("script %s: empty reply", s.name)
	}
	status, ok := res[0].(int64)
	if !ok || len(res) < 2 {
		return 0, nil, fmt.Errorf("script %s: unexpected reply %v", s.name, res)
	}
	if _, refused := res[1].(string); refused {
		// The change is made; only its announcement was refused.
		p.wakeFailures.Add(1)
	}
	if err := statusError(status); err != nil {
		return status, nil, err
	}
	if r.waited && r.acked < p.replicas {
		err := fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, r.acked, p.replicas, p.waitFor)
		if r.waitErr != nil {
			err = fmt.Errorf("%w: %w", err, r.waitErr)
		}
		return status, res[2:], err
	}
	return status, res[2:], nil
}

// statusError maps a script's refusal to the core's sentinel of the same
// meaning.
func statusError(status int64) error {
	switch status {
	case statusOK, statusNone, statusQueued:
		return nil
	case statusNotFound:
		return crserrors.ErrResourceNotFound
	case statusDuplicate:
		return crserrors.ErrDuplicateKey
	case statusDraining:
		return fmt.Errorf("%w: %w", crserrors.ErrDuplicateKey, crserrors.ErrResourceDraining)
	case statusNotActive:
		return crserrors.ErrResourceNotActive
	case statusNotExcluded:
		return crserrors.ErrResourceNotExcluded
	case statusNotInactive:
		return crserrors.ErrResourceNotInactive
	case statusEmpty:
		return fmt.Errorf("%w: %w", crserrors.ErrNoResourceAvailable, ErrPoolEmpty)
	case statusExceeds:
		return crserrors.ErrCostExceedsLimits
	case statusUnknown:
		return crserrors.ErrUnknownLimit
	}
	return fmt.Errorf("unknown script status %d", status)
}

// leftError is the error of a call whose ctx ended while its command
// was in flight: the command may still run on the server.
type leftError struct{ err error }

func (e leftError) Error() string { return e.err.Error() }
func (e leftError) Unwrap() error { return e.err }

// Who answers a call of eval: the command, or the caller's ctx.
const (
	evalPending int32 = iota
	evalAnswered
	evalLeft
)

// eval runs the script and returns its reply, or ctx's error as soon as
// ctx ends, whether or not the client honours contexts
// (ContextTimeoutEnabled) and the server answers: the command runs in a
// goroutine, which lives on until the client gets the reply or gives up
// (its own timeouts, or ctx's deadline with ContextTimeoutEnabled). What the command did then is not lost: a write's
// outcome is recorded under its request on the server, for a repeat to
// learn; an acquire's lease is given back (abandon, which also stops the
// request if it has not run yet).
func (p *Pool) eval(ctx context.Context, s script, request string, keys []string, argv []any) result {
	if ctx.Done() == nil {
		return p.exec(ctx, s, keys, argv)
	}
	if err := ctx.Err(); err != nil {
		return result{err: err} // sent nothing
	}
	// The command outlives the call when ctx ends first, so it must not
	// use ctx (the caller may reuse or recycle it): it runs under a
	// context of its own with the same deadline, and without ctx's
	// values.
	cmdCtx, cancel := context.Background(), context.CancelFunc(func() {})
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		cmdCtx, cancel = context.WithDeadline(cmdCtx, deadline)
	}
	done := make(chan result, 1)
	var state atomic.Int32
	// An acquire's grant may come after its caller left, and is then
	// given back: Close waits for that.
	tracked := s.name == scriptAcquire.name && p.track()
	p.late.Add(1)
	go func() {
		defer p.late.Done()
		if tracked {
			defer p.untrack()
		}
		r := p.exec(cmdCtx, s, keys, argv)
		cancel()
		if state.CompareAndSwap(evalPending, evalAnswered) {
			done <- r
			return
		}
		// The caller has gone: nobody will know a lease granted now.
		var refused redis.Error
		if s.name == scriptAcquire.name && !errors.As(r.err, &refused) {
			p.giveBack(request) // already in the background
		}
	}()
	select {
	case r := <-done:
		if r.err != nil && hasDeadline && !time.Now().Before(deadline) {
			// The command met the deadline that ctx is about to meet:
			// the caller gets ctx's error, as from a call that ctx
			// ended.
			<-ctx.Done()
			return result{err: ctx.Err()}
		}
		return r
	case <-ctx.Done():
		if state.CompareAndSwap(evalPending, evalLeft) {
			return result{err: leftError{ctx.Err()}}
		}
		return <-done // answered at the same moment
	}
}

// result is the outcome of one script call.
type result struct {
	res []any
	err error
	// waited: the script's success waited for replicas (WaitReplicas),
	// of which acked acknowledged its writes; waitErr is the error of a
	// WAIT that failed (acked is then 0).
	waited  bool
	acked   int
	waitErr error
}

// exec runs the script and, for a success that waits for replicas,
// WAIT on the same connection, so that it counts the replicas that
// have the script's writes. A script whose answer repeats an earlier
// one (a resent request) writes that answer again, so that WAIT covers
// the first writes too on a server that counts only the connection's
// own writes (see lua/epilogue.lua).
func (p *Pool) exec(ctx context.Context, s script, keys []string, argv []any) result {
	if p.replicas == 0 || !s.waits {
		res, err := p.call(ctx, p.client, s, keys, argv)
		return result{res: res, err: err}
	}
	node, err := p.primary(ctx)
	if err != nil {
		return result{err: err}
	}
	conn := node.Conn()
	defer conn.Close()
	res, err := p.call(ctx, conn, s, keys, argv)
	if err != nil || len(res) == 0 || res[0] != int64(statusOK) {
		return result{res: res, err: err}
	}
	timeout := p.waitFor
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	if timeout < time.Millisecond { // WAIT 0 would wait forever
		return result{res: res, waited: true, waitErr: context.DeadlineExceeded}
	}
	n, err := conn.Wait(ctx, p.replicas, timeout).Result()
	if err != nil {
		return result{res: res, waited: true, waitErr: err}
	}
	return result{res: res, waited: true, acked: int(n)}
}

// newRequest is a random 128-bit request identity: unique among every
// call of every process that a record can outlive.
func newRequest() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}
