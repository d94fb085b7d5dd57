package loadtest

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// interruptingPool is the baseline, which interrupts the run (as a
// signal would) once it has handed out a number of resources: the run
// is cut short at a point its requests decide, not a timer.
type interruptingPool struct {
	*mutexPool
	after     int64
	acquired  atomic.Int64
	interrupt func()
}

func (p *interruptingPool) acquire(ctx context.Context, h *mutexHandle) (int, error) {
	r, err := p.mutexPool.acquire(ctx, h)
	if err == nil && p.acquired.Add(1) == p.after {
		p.interrupt()
	}
	return r, err
}

// interruptAt is a context that a signal interrupts at its n-th Err
// call: a setup loop that looks at it between steps is cut short at the
// step the test chooses, not at a moment a timer picks.
type interruptAt struct {
	context.Context
	cancel context.CancelCauseFunc
	sig    syscall.Signal
	n      atomic.Int64
}

func newInterruptAt(t *testing.T, n int64, sig syscall.Signal) *interruptAt {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	c := &interruptAt{Context: ctx, cancel: cancel, sig: sig}
	c.n.Store(n)
	return c
}

func (c *interruptAt) Err() error {
	if c.n.Add(-1) == 0 {
		c.cancel(Interrupt{Signal: c.sig})
	}
	return c.Context.Err()
}

// A signal while the workers are being created (a million take seconds)
// stops their creation: the run ends at once, its report saying how far
// the setup got, instead of starting every worker first.
func TestASignalWhileTheWorkersAreStartedStopsStartingThem(t *testing.T) {
	cfg := quick(Normal)
	cfg.Pool = "mutex"
	cfg.Workers = 4096
	ctx := newInterruptAt(t, 1000, syscall.SIGINT) // at the check before the 1,000th worker
	r := newEngine[mutexHandle](cfg, newMutexPool(cfg)).run(ctx, nil)

	const during = "starting the workers: 999 of 4,096 started"
	if in := r.Interrupted; in == nil || in.Cause != "SIGINT" || in.During != during {
		t.Fatalf("interruption %+v, want SIGINT during %q", in, during)
	}
	if r.Requests.Attempts != 0 || r.Throughput.WindowNs != 0 || !r.Accounting.OK {
		t.Fatalf("%d attempts, window %d ns, accounting %+v", r.Requests.Attempts, r.Throughput.WindowNs, r.Accounting)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "INTERRUPTED by SIGINT while "+during) || !strings.Contains(b.String(), "nothing measured") {
		t.Fatalf("the report does not say where the setup stopped:\n%s", b.String())
	}
}

// A signal while a pool's resources are added (millions take minutes)
// stops adding them: the command says how far it got, that nothing ran,
// and exits as the signal would have ended it.
func TestASignalWhileTheResourcesAreAddedStopsAddingThem(t *testing.T) {
	for _, pool := range []string{"crs", "mutex"} {
		ctx := newInterruptAt(t, 1, syscall.SIGTERM) // after the first chunk
		var stdout, stderr bytes.Buffer
		args := append(append([]string{}, quickArgs...), "-pool", pool, "-resources", strconv.Itoa(3*setupChunk))
		code := Main(ctx, args, &stdout, &stderr)
		want := "crsload: interrupted by SIGTERM while adding the resources (4,096 of 12,288): nothing ran\n"
		if code != 143 || stderr.String() != want || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, want 143\nstderr %q, want %q\nstdout:\n%s", pool, code, stderr.String(), want, stdout.String())
		}
	}
}

func TestAnInterruptedRunSaysSoAndMeasuresTheWindowItRan(t *testing.T) {
	cfg := quick(Normal)
	cfg.Pool = "mutex"
	cfg.Warmup = 0
	cfg.Duration = time.Hour // only the interrupt ends the run
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	p := &interruptingPool{mutexPool: newMutexPool(cfg), after: 500}
	p.interrupt = func() { cancel(Interrupt{Signal: syscall.SIGINT}) }
	r := newEngine[mutexHandle](cfg, p).run(ctx, nil)

	in := r.Interrupted
	if in == nil || in.Cause != "SIGINT" || in.AtNs <= 0 || in.AtNs > r.ElapsedNs {
		t.Fatalf("interruption %+v (the run took %d ns)", in, r.ElapsedNs)
	}
	if tp := r.Throughput; tp.WindowNs != in.AtNs || tp.Completed == 0 || tp.Completed > r.Requests.Acquisitions {
		t.Fatalf("window %d ns, %d completed, for an interruption at %d ns and %d acquisitions",
			tp.WindowNs, tp.Completed, in.AtNs, r.Requests.Acquisitions)
	}
	if !r.Accounting.OK {
		t.Fatalf("accounting: %+v", r.Accounting)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "INTERRUPTED by SIGINT") || !strings.Contains(b.String(), "of the 1h0m0s asked for") {
		t.Fatalf("the report does not say the run was cut short:\n%s", b.String())
	}
}

func TestARunInterruptedInItsWarmUpMeasuresNothing(t *testing.T) {
	cfg := quick(Normal)
	cfg.Pool = "mutex"
	cfg.Warmup = time.Hour // only the interrupt ends the run, in its warm-up
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	p := &interruptingPool{mutexPool: newMutexPool(cfg), after: 50}
	p.interrupt = func() { cancel(Interrupt{Signal: syscall.SIGTERM}) }
	r := newEngine[mutexHandle](cfg, p).run(ctx, nil)
	if r.Interrupted == nil || r.Interrupted.During != "" || r.Throughput.WindowNs != 0 || r.Throughput.PerSecond != 0 || r.Throughput.Ratio != 0 {
		t.Fatalf("interrupted %+v, throughput %+v", r.Interrupted, r.Throughput)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "nothing measured") || strings.Contains(b.String(), "NaN") {
		t.Fatalf("report:\n%s", b.String())
	}
}

func TestASignalledRunExitsWith128PlusTheSignal(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(Interrupt{Signal: sig})
		var stdout, stderr bytes.Buffer
		if code := Main(ctx, quickArgs, &stdout, &stderr); code != want {
			t.Errorf("%v: exit %d, want %d\nstderr:\n%s", sig, code, want, stderr.String())
		}
		if !strings.Contains(stdout.String(), "INTERRUPTED") || !strings.Contains(stderr.String(), "crsload: interrupted") {
			t.Errorf("%v: the run does not say it was interrupted\nstdout:\n%s\nstderr:\n%s", sig, stdout.String(), stderr.String())
		}
	}
}

func TestTheHTMLReportOfAnInterruptedRunSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(Interrupt{Signal: syscall.SIGINT})
	r, err := Run(ctx, quick(Normal), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Interrupted by SIGINT") {
		t.Fatal("the HTML report does not say the run was interrupted")
	}
}
