package loadtest

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Interrupt is the cause of a run's context when a signal ended it.
type Interrupt struct{ Signal os.Signal }

func (i Interrupt) Error() string { return "interrupted by " + signalName(i.Signal) }

// status is the exit status of a process the signal ended, as a shell
// reports it: 128 + the signal's number.
func (i Interrupt) status() int {
	if s, ok := i.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// NotifyContext returns a context that the first SIGINT or SIGTERM
// cancels, with an Interrupt as its cause: the run then stops, and the
// report covers what ran. After that first signal the process takes the
// signals' default action again, so that a second one ends it at once
// when the end of a run is slow (workers to stop, other processes to
// wait for).
func NotifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(Interrupt{Signal: s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
