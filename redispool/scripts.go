package redispool

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one server-side operation: the shared prelude, the
// operation's body as the function main, and the epilogue that runs it
// and replies, so that each one is a single atomic step.
type script struct {
	name string
	*redis.Script
}

func newScript(name string) script {
	src := func(file string) string {
		b, err := luaFiles.ReadFile("lua/" + file + ".lua")
		if err != nil {
			panic(err) // embedded at build time: cannot happen
		}
		return string(b)
	}
	return script{name: name, Script: redis.NewScript(src("prelude") +
		"\nlocal function main()\n" + src(name) + "\nend\n" + src("epilogue"))}
}

// The scripts, built once per process: the SHA-1 of each is computed
// here and every call is an EVALSHA.
var (
	scriptAcquire  = newScript("acquire")
	scriptAbandon  = newScript("abandon")
	scriptRelease  = newScript("release")
	scriptCooldown = newScript("cooldown")
	scriptExtend   = newScript("extend")
	scriptAdd      = newScript("add")
	scriptUpdate   = newScript("update")
	scriptRemove   = newScript("remove")
	scriptExclude  = newScript("exclude")
	scriptInclude  = newScript("include")
	scriptSuspend  = newScript("suspend")
	scriptStats    = newScript("stats")
)

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
)

// run calls s with the pool's keys and ARGV = channel, args...; it
// returns the reply after its status and wake-up report, or the
// status's sentinel (or the client's error), for the caller to wrap
// with the operation. A wake-up that the server refused to publish is
// counted, not returned: the change it announced was made.
// Script.Run sends EVALSHA and, only when the server answers NOSCRIPT
// (a restarted or flushed server), EVAL with the source, which loads the
// script again for the following EVALSHAs.
func (p *Pool) run(ctx context.Context, s script, args ...any) (status int64, reply []any, err error) {
	argv := make([]any, 0, len(args)+1)
	argv = append(argv, p.channel)
	argv = append(argv, args...)
	res, err := s.Run(ctx, p.client, p.keys[:], argv...).Slice()
	if err != nil {
		return 0, nil, err
	}
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
	return status, res[2:], nil
}

// statusError maps a script's refusal to the core's sentinel of the same
// meaning.
func statusError(status int64) error {
	switch status {
	case statusOK, statusNone:
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
	}
	return fmt.Errorf("unknown script status %d", status)
}
