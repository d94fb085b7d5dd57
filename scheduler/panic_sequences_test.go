package scheduler_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// randomInput is a fuzz input drawn from a seeded generator: a random
// configuration (panics flags chosen by the caller) and random calls.
func randomInput(seed uint64, panics byte) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	data := []byte{byte(r.Uint32()), panics}
	for range 100 + r.IntN(300) {
		data = append(data, byte(r.Uint32()))
	}
	return data
}

// TestRandomPanicsNeverBreakTheStateModel runs random call sequences
// with panics injected at random points of the comparator, the key
// function, the strategy and an observer (see runGen): after every
// recovered panic the call must have had no effect, every invariant must
// hold, and the following calls must still match the model.
func TestRandomPanicsNeverBreakTheStateModel(t *testing.T) {
	sequences := 100
	if testing.Short() {
		sequences = 20
	}
	for seed := range uint64(sequences) {
		if err := runGen(randomInput(seed, 0x0f), nil); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestConcurrentPanicsLeaveTheSchedulerConsistent has goroutines call
// the scheduler, and waiters wait in it, while the comparator panics at
// random (about one comparison in 40). Each panic must reach the caller
// and undo its call; no resource may ever have more holders than its
// capacity; and once the panics stop and every hold is returned, the
// scheduler must be consistent and empty of holds and waiters.
func TestConcurrentPanicsLeaveTheSchedulerConsistent(t *testing.T) {
	const workers, waiters, opsEach, keys = 8, 2, 400, genMaxKeys
	var armed atomic.Bool
	cfg := config.Config[*genRes, string]{
		HeapCount:     3,
		AcquirePolicy: config.Exclusive,
		KeyFunc:       func(r *genRes) string { return r.key },
		Capacity:      func(r *genRes) int { return r.cap },
		Comparator: func(a, b *genRes) int {
			if armed.Load() && rand.IntN(40) == 0 {
				panic(genPanic{"comparator"})
			}
			return a.prio - b.prio
		},
	}
	s := newGenSchedulerT(t, cfg)
	capacity := func(k int) int { return 1 + k%2 }
	holders := make([]atomic.Int32, keys)
	for k := range keys {
		if err := s.Add(&genRes{key: genKey(k), prio: k, cap: capacity(k)}); err != nil {
			t.Fatal(err)
		}
	}
	// guarded runs f and reports an injected panic as true; any other
	// panic fails the test.
	guarded := func(f func()) (panicked bool) {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(genPanic); !ok {
					t.Errorf("unexpected panic: %v", p)
				}
				panicked = true
			}
		}()
		f()
		return false
	}
	took := func(r *genRes) bool {
		k := genIndex(r.key)
		if n := holders[k].Add(1); int(n) > capacity(k) {
			t.Errorf("%s has %d holders, capacity %d", r.key, n, capacity(k))
			return false
		}
		return true
	}
	// release returns a hold, retrying while the comparator panics: a
	// panicked Release did not release.
	release := func(key string) {
		holders[genIndex(key)].Add(-1)
		for {
			var err error
			if !guarded(func() { err = s.Release(key) }) {
				if err != nil {
					t.Errorf("Release(%s) of a held resource: %v", key, err)
				}
				return
			}
		}
	}

	ctx, stopWaiting := context.WithCancel(context.Background())
	var wg, waiting sync.WaitGroup
	armed.Store(true)
	for w := range waiters {
		waiting.Add(1)
		go func() {
			defer waiting.Done()
			for ctx.Err() == nil {
				var r *genRes
				var err error
				if guarded(func() { r, err = s.AcquireContext(ctx) }) {
					continue
				}
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("waiter %d: %v", w, err)
					}
					return
				}
				if took(r) {
					release(r.key)
				}
			}
		}()
	}
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			var held []string
			for range opsEach {
				k := r.IntN(keys)
				key := genKey(k)
				switch op := r.IntN(10); {
				case op < 3:
					var v *genRes
					var err error
					if !guarded(func() { v, err = s.Acquire() }) && err == nil && took(v) {
						held = append(held, v.key)
					}
				case op < 5 && len(held) > 0:
					release(held[len(held)-1])
					held = held[:len(held)-1]
				case op < 6:
					guarded(func() { _ = s.Update(&genRes{key: key, prio: r.IntN(10), cap: capacity(k)}) })
				case op < 7:
					guarded(func() { _ = s.Exclude(key) })
				case op < 8:
					guarded(func() { _ = s.Include(key) })
				case op < 9:
					guarded(func() { _ = s.Remove(key) })
				default:
					guarded(func() { _ = s.Add(&genRes{key: key, prio: r.IntN(10), cap: capacity(k)}) })
				}
			}
			for _, key := range held {
				release(key)
			}
		}()
	}
	wg.Wait()
	stopWaiting()
	waiting.Wait()
	armed.Store(false)
	for k := range keys {
		_ = s.Include(genKey(k))
	}
	mustGenInvariants(t, s)
	if st := s.Stats(); st.Holders != 0 || st.Waiters != 0 || st.HeldResources != 0 || st.DrainingResources != 0 ||
		st.ActiveResources != s.Len() {
		t.Fatalf("after every hold was returned: %+v, Len %d", st, s.Len())
	}
}

func newGenSchedulerT(t *testing.T, cfg config.Config[*genRes, string]) *scheduler.Scheduler[*genRes, string] {
	t.Helper()
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func mustGenInvariants(t *testing.T, s *scheduler.Scheduler[*genRes, string]) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// The broken variants below each have one deliberate bug. The generated
// checks must reject every one of them: a check that passes a broken
// scheduler proves nothing.

// forgetfulRemove reports success for a resource without holders but
// leaves it in the pool. The fuzz target's model comparison must catch it.
type forgetfulRemove struct {
	*scheduler.Scheduler[*genRes, string]
}

func (b forgetfulRemove) Remove(id string) error {
	if st := b.Stats(); st.Holders == 0 {
		if _, err := b.Get(id); err == nil {
			return nil
		}
	}
	return b.Scheduler.Remove(id)
}

// swallowsPanics recovers every panic inside Exclude, Include and Update
// and reports success: the panic never reaches the caller, and the call
// claims an effect it did not have.
type swallowsPanics struct {
	*scheduler.Scheduler[*genRes, string]
}

func swallow(f func() error) (err error) {
	defer func() {
		if recover() != nil {
			err = nil
		}
	}()
	return f()
}

func (b swallowsPanics) Exclude(id string) error {
	return swallow(func() error { return b.Scheduler.Exclude(id) })
}

func (b swallowsPanics) Include(id string) error {
	return swallow(func() error { return b.Scheduler.Include(id) })
}

func (b swallowsPanics) Update(v *genRes) error {
	return swallow(func() error { return b.Scheduler.Update(v) })
}

// effectThenPanic changes the state and only then runs the comparator
// (as a transition that orders the heap after committing would): when the
// comparator panics, the call panics with its effect in place.
type effectThenPanic struct {
	*scheduler.Scheduler[*genRes, string]
	h *genHooks
}

func (b effectThenPanic) Exclude(id string) error {
	err := b.Scheduler.Exclude(id)
	b.h.compare(&genRes{}, &genRes{})
	return err
}

func (b effectThenPanic) Suspend(id string, d time.Duration) error {
	err := b.Scheduler.Suspend(id, d)
	b.h.compare(&genRes{}, &genRes{})
	return err
}

// seedCorpus returns the committed seed inputs of FuzzOperationSequences.
func seedCorpus(t *testing.T) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzOperationSequences", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no seed corpus: %v", err)
	}
	var inputs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		quoted := strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "[]byte("), ")")
		s, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		inputs = append(inputs, []byte(s))
	}
	return inputs
}

// TestGeneratedChecksRejectBrokenVariants runs the fuzz target's harness
// over its seed corpus, then over random inputs, against each broken
// variant, and requires a failure. forgetfulRemove needs no panics;
// the other two are caught only through the injected panics. (The seed
// corpus passing the real scheduler is the control: go test runs it as
// FuzzOperationSequences.)
func TestGeneratedChecksRejectBrokenVariants(t *testing.T) {
	variants := []struct {
		name string
		wrap genWrap
	}{
		{"RemoveForgetsIdleResource", func(s *scheduler.Scheduler[*genRes, string], _ *genHooks) genPool {
			return forgetfulRemove{s}
		}},
		{"PanicSwallowedAndReportedAsSuccess", func(s *scheduler.Scheduler[*genRes, string], _ *genHooks) genPool {
			return swallowsPanics{s}
		}},
		{"EffectCommittedBeforeThePanic", func(s *scheduler.Scheduler[*genRes, string], h *genHooks) genPool {
			return effectThenPanic{s, h}
		}},
	}
	corpus := seedCorpus(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			inputs := append([][]byte(nil), corpus...)
			for seed := range uint64(200) {
				inputs = append(inputs, randomInput(seed, 0x0f))
			}
			for i, in := range inputs {
				if err := runGen(in, v.wrap); err != nil {
					t.Logf("rejected at input %d: %s", i, firstLine(err.Error(), 3))
					return
				}
			}
			t.Fatalf("%d inputs passed broken variant %s", len(inputs), v.name)
		})
	}
}

func firstLine(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " / ")
}
