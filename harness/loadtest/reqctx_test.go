package loadtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDeadlineContextExpiresWhenWaitedOn(t *testing.T) {
	var c deadlineCtx
	c.reset(context.Background(), time.Now().Add(time.Millisecond))
	defer c.release()
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) || !c.pastDeadline() {
		t.Fatalf("after its deadline: Err %v, expired %v", c.Err(), c.pastDeadline())
	}
}

func TestDeadlineContextReportsAPassedDeadlineWithoutBeingArmed(t *testing.T) {
	var c deadlineCtx
	c.reset(context.Background(), time.Now().Add(-time.Second))
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err %v", c.Err())
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done is open although Err is set")
	}
}

func TestDeadlineContextEndsWithItsParent(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.Background())
	var c deadlineCtx
	c.reset(parent, time.Now().Add(time.Hour))
	defer c.release()
	done := c.Done()
	cancel(errStopped)
	<-done
	if !errors.Is(c.Err(), context.Canceled) || c.pastDeadline() {
		t.Fatalf("Err %v, expired %v", c.Err(), c.pastDeadline())
	}
	if context.Cause(parent) != errStopped {
		t.Fatal("the parent's cause is lost")
	}
}

func TestResetDetachesTheContextFromItsPreviousRequest(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	var c deadlineCtx
	c.reset(parent, time.Now().Add(time.Hour))
	c.Done() // armed on the old parent
	c.release()
	c.reset(context.Background(), time.Now().Add(time.Hour))
	defer c.release()
	cancel()
	if err := c.Err(); err != nil {
		t.Fatalf("the previous request's parent ended the next request: %v", err)
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) < time.Minute {
		t.Fatalf("deadline %v, %v", d, ok)
	}
}

func TestDeadlineContextAllocatesNothingUntilWaitedOn(t *testing.T) {
	var c deadlineCtx
	parent := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c.reset(parent, time.Now().Add(time.Second))
		_ = c.Err()
		c.release()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request", allocs)
	}
}
