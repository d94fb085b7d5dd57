package loadtest

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is the context of one request's acquire: its parent's, with
// a deadline. Unlike context.WithTimeout it arms nothing until someone
// waits on it. The scheduler calls Done only when it has to wait, so on
// the fast path (a resource is free, as always under the Shared policy) a
// request's timeout costs no timer and no allocation. With
// context.WithTimeout the harness allocated about 250 bytes per request,
// enough to run the GC several times a second at 40,000 requests a second,
// and on a busy two-core machine its stop-the-world pauses then cost a few
// percent of the throughput being measured.
//
// Each worker owns one and resets it for each request; generations keep
// a timer that fires late for an earlier request from touching a later one.
type deadlineCtx struct {
	context.Context // the parent: Value, and the source of cancellation

	mu       sync.Mutex
	gen      uint64
	deadline time.Time
	done     chan struct{} // made on the first Done
	err      error
	expired  bool // err came from the deadline, not from the parent
	timer    *time.Timer
	stop     func() bool // undoes the context.AfterFunc on the parent
}

// reset starts a request: a new deadline under parent.
func (c *deadlineCtx) reset(parent context.Context, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.disarm()
	c.Context = parent
	c.gen++
	c.deadline = deadline
	c.done, c.err, c.expired = nil, nil, false
}

// release ends the request, stopping what Done armed, like the cancel
// function of context.WithTimeout.
func (c *deadlineCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.disarm()
}

func (c *deadlineCtx) disarm() {
	if c.timer != nil {
		c.timer.Stop()
		c.stop()
		c.timer, c.stop = nil, nil
	}
}

// Deadline is the earlier of the request's and the parent's.
func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done arms the deadline and the parent's cancellation on first use.
func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done) // ended before anyone waited
		return c.done
	}
	if c.check(); c.err != nil {
		return c.done // check closed it
	}
	gen := c.gen
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(gen, context.DeadlineExceeded, true) })
	parent := c.Context
	c.stop = context.AfterFunc(parent, func() { c.end(gen, parent.Err(), false) })
	return c.done
}

// Err reports the deadline or the parent's end, armed or not.
func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check()
	return c.err
}

// pastDeadline reports whether the context has ended and its own
// deadline has passed: the request waited longer than its timeout, an
// acquire timeout, whatever else (the end of the run) ended it too.
func (c *deadlineCtx) pastDeadline() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check()
	return c.expired || (c.err != nil && !time.Now().Before(c.deadline))
}

// check records an end that no timer has reported yet. Requires mu.
func (c *deadlineCtx) check() {
	if c.err != nil {
		return
	}
	if err := c.Context.Err(); err != nil {
		c.finish(err, false)
	} else if !time.Now().Before(c.deadline) {
		c.finish(context.DeadlineExceeded, true)
	}
}

// end is a timer's or the parent's report, for generation gen.
func (c *deadlineCtx) end(gen uint64, err error, expired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == c.gen && c.err == nil {
		c.finish(err, expired)
	}
}

// finish sets the error and closes done if Done made it. Requires mu.
func (c *deadlineCtx) finish(err error, expired bool) {
	c.err, c.expired = err, expired
	if c.done != nil {
		close(c.done)
	}
}
