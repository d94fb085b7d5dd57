package loadtest

import (
	"context"
	"fmt"
)

// setupChunk is how many resources a pool adds between two looks at the
// run's context: few enough that a signal stops a pool of millions at
// once, enough that the looks cost nothing.
const setupChunk = 4096

// setupCut is a setup that a signal cut short, before the run's clock
// started: nothing ran.
type setupCut struct {
	what     string // "adding the resources"
	done, of int
}

func (c *setupCut) Error() string {
	return fmt.Sprintf("%s (%s of %s)", c.what, group(c.done), group(c.of))
}

// inChunks calls add for the chunks [from, to) of n items, in order, and
// returns a *setupCut if ctx ends between two of them. The first chunk
// is always added: a pool of one chunk is built sooner than stopped, and
// a run whose context has already ended still gets its report (nothing
// measured).
func inChunks(ctx context.Context, n int, what string, add func(from, to int) error) error {
	for from := 0; from < n; from += setupChunk {
		if from > 0 && ctx.Err() != nil {
			return &setupCut{what: what, done: from, of: n}
		}
		if err := add(from, min(n, from+setupChunk)); err != nil {
			return err
		}
	}
	return nil
}
