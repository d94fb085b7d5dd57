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

// newRequest is a random 128-bit request identity: unique among every
// call of every process that a record can outlive.
func newRequest() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}
