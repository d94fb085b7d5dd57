package loadtest

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestFlushRunsEveryPendingFunctionExactlyOnce(t *testing.T) {
	var s timerSet
	var ran [3]atomic.Int32
	for i := range ran {
		s.add(time.Hour, func() { ran[i].Add(1) })
	}
	s.flush()
	s.flush()
	for i := range ran {
		if n := ran[i].Load(); n != 1 {
			t.Fatalf("function %d ran %d times", i, n)
		}
	}
}

func TestFlushWaitsForFunctionsWhoseTimerFired(t *testing.T) {
	var s timerSet
	started, release := make(chan struct{}), make(chan struct{})
	var done atomic.Bool
	s.add(0, func() {
		close(started)
		<-release
		done.Store(true)
	})
	<-started
	go close(release)
	s.flush()
	if !done.Load() {
		t.Fatal("flush returned while a fired function was still running")
	}
}
