package waitload

import (
	"context"
	"fmt"
	"strings"
)

// pool is what the harness needs from a pool: take a resource (waiting),
// give it back, and say which of the Config.Resources resources a token
// stands for. Tok is the pool's own handle, so that no pool pays for
// boxing it in an interface on every request.
type pool[Tok any] interface {
	// acquire waits for a resource until ctx ends.
	acquire(ctx context.Context) (Tok, error)
	// release returns the resource of tok.
	release(tok Tok) error
	// resource is tok's resource, in [0, Config.Resources).
	resource(tok Tok) int
	// close shuts the pool down once every worker has returned.
	close()
}

// runner runs the workload against one kind of pool.
type runner func(name string, cfg Config) (Result, error)

// with binds a pool constructor to the generic harness.
func with[Tok any](open func(Config) (pool[Tok], error)) runner {
	return func(name string, cfg Config) (Result, error) {
		return measure(name, cfg, open)
	}
}

// registry lists the pools in the order the program runs them: crs first,
// then the baselines from the simplest (a channel) to the most complete.
var registry = []struct {
	name string
	run  runner
}{
	{"crs", with(openCRS)},
	{"crs-lease", with(openCRSLease)},
	{"channel", with(openChannel)},
	{"semaphore", with(openSemaphore)},
	{"puddle", with(openPuddle)},
}

// Pools returns the names Run accepts, in the order the program runs them.
func Pools() []string {
	names := make([]string, len(registry))
	for i, p := range registry {
		names[i] = p.name
	}
	return names
}

// Run puts the workload cfg through the pool called name (see Pools). The
// error is for a refused configuration or a pool that could not be built;
// a failure during the run (an acquire or release error, a resource held
// twice) is reported in the Result.
func Run(name string, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	for _, p := range registry {
		if p.name == name {
			return p.run(name, cfg)
		}
	}
	return Result{}, fmt.Errorf("unknown pool %q (known: %s)", name, strings.Join(Pools(), ", "))
}
