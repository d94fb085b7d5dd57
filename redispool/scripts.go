package redispool

import (
	"embed"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one server-side operation: the pool's helpers and this
// operation's body, a single atomic step on the server, run by EVALSHA
// (EVAL once when the server answers NOSCRIPT: go-redis's Script.Run).
// EVALSHA names the code by its SHA-1, so the server runs exactly the
// code this package sent, whoever else uses it. A FUNCTION library is
// called by name instead, and any user allowed FUNCTION LOAD (which
// needs no key, and is not @dangerous) can load other code under that
// name, which the pool's FCALL would then run with the pool's user's
// rights: so the pool calls none.
type script struct {
	name string
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

// operation is the body of op as a function.
func operation(op string) string {
	return "local function op_" + op + "()\n" + luaSource(op) + "\nend\n"
}

// helpers are the functions that every operation uses, in the order
// they must be defined (a Lua local is seen only after it).
var helpers = func() string {
	var b strings.Builder
	for _, file := range []string{"prelude", "resource", "bucket", "grant", "health", "lifecycle", "step", "fair", "epilogue"} {
		b.WriteString(luaSource(file))
		b.WriteString("\n")
	}
	return b.String()
}()

func newScript(name string, record bool) script {
	return script{name: name, record: record, Script: redis.NewScript(
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
	scriptTenants  = newScript("tenants", true)
)

func waiting(s script) script {
	s.waits = true
	return s
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
