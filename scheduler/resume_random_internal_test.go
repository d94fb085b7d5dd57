package scheduler

// Random sequences of calls, with a comparator that panics at random,
// and a fake clock advanced by random amounts with its timers at times
// late: after every step every invariant holds (CheckInvariants), and
// each suspension or ejection that ends is reported once (EventResume),
// or not at all when it was cut short (Include, Exclude, an ejection
// over a suspension) or its resource was removed.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/internal/node"
)

type randomResource struct {
	key       string
	prio, cap int
	limited   bool
	budgeted  bool
}

// stepEnd is an event type no operation emits: the test emits it after
// each step and waits for it, so that it sees each step's events.
const stepEnd events.EventType = 200

type stepRecorder struct {
	mu    sync.Mutex
	step  []events.Event[string]
	flush chan struct{}
}

func (r *stepRecorder) OnEvent(e events.Event[string]) {
	if e.Type == stepEnd {
		r.flush <- struct{}{}
		return
	}
	r.mu.Lock()
	r.step = append(r.step, e)
	r.mu.Unlock()
}

// take returns the events of the step that just ran.
func (r *stepRecorder) take(s *Scheduler[*randomResource, string]) []events.Event[string] {
	s.emit(stepEnd, "")
	<-r.flush
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.step
	r.step = nil
	return got
}

type restSnapshot struct {
	rest  node.Rest
	until int64
	state node.State
}

func restsOf(s *Scheduler[*randomResource, string]) map[*node.Node[*randomResource, string]]restSnapshot {
	m := map[*node.Node[*randomResource, string]]restSnapshot{}
	s.nodes.Range(func(_ string, n *node.Node[*randomResource, string]) {
		m[n] = restSnapshot{n.Rest, n.RestUntil, n.State}
	})
	return m
}

func TestRandomRestsAreReportedOnceEach(t *testing.T) {
	for seed := range uint64(60) {
		if err := runRandomRests(seed, 400); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func runRandomRests(seed uint64, steps int) (err error) {
	r := rand.New(rand.NewPCG(seed, 0xc0ffee))
	clock := fakeclock.New()
	var countdown atomic.Int64
	countdown.Store(math.MinInt64 / 2)
	rec := &stepRecorder{flush: make(chan struct{})}
	policy := config.Exclusive
	if r.IntN(4) == 0 {
		policy = config.Shared
	}
	cfg := config.Config[*randomResource, string]{
		HeapCount:     1 + r.IntN(2),
		AcquirePolicy: policy,
		KeyFunc:       func(v *randomResource) string { return v.key },
		Capacity:      func(v *randomResource) int { return v.cap },
		Comparator: func(a, b *randomResource) int {
			if countdown.Add(-1) == 0 {
				panic("comparator trap")
			}
			return a.prio - b.prio
		},
		Clock:          clock,
		EventQueueSize: 1 << 16,
		Observers:      []events.Observer[string]{rec},
		Ejection: config.Ejection{
			ConsecutiveFailures: 1 + r.IntN(2),
			BaseTime:            time.Second,
			MaxTime:             3 * time.Second,
			MaxEjectedShare:     []float64{0, 0.5}[r.IntN(2)],
		},
	}
	if r.IntN(3) == 0 {
		cfg.ReleaseCooldown = 300 * time.Millisecond
	}
	if r.IntN(3) == 0 {
		cfg.LeaseTTL = 2 * time.Second
	}
	if r.IntN(2) == 0 {
		cfg.RateLimit = func(v *randomResource) (float64, int) {
			if v.limited {
				return 2, 1
			}
			return 0, 0
		}
	}
	if r.IntN(2) == 0 {
		cfg.Limits = func(v *randomResource) []config.Limit {
			if v.budgeted {
				return []config.Limit{{Name: "tok", Max: 4, Per: time.Second}}
			}
			return nil
		}
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	const keys = 6
	newRes := func(k int) *randomResource {
		return &randomResource{key: fmt.Sprintf("k%d", k), prio: r.IntN(10), cap: 1 + r.IntN(2), limited: r.IntN(3) == 0, budgeted: r.IntN(2) == 0}
	}
	for k := range keys {
		if err := s.Add(newRes(k)); err != nil {
			return err
		}
	}
	rec.take(s)
	var leases []Lease[*randomResource, string]
	var anon []string
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	paused := false
	key := func() string { return fmt.Sprintf("k%d", r.IntN(keys)) }
	dur := func() time.Duration { return time.Duration(1+r.IntN(20)) * 100 * time.Millisecond }
	// onLease runs f on a random lease and forgets the lease unless f
	// panics (then it had no effect: the lease is still held).
	onLease := func(f func(Lease[*randomResource, string]) error) {
		if len(leases) == 0 {
			return
		}
		i := r.IntN(len(leases))
		_ = f(leases[i])
		leases = append(leases[:i], leases[i+1:]...)
	}
	// useLease runs f on a random lease, which it keeps.
	useLease := func(f func(*Lease[*randomResource, string]) error) {
		if len(leases) > 0 {
			_ = f(&leases[r.IntN(len(leases))])
		}
	}
	for step := range steps {
		before := restsOf(s)
		t0 := s.now()
		advance := false
		if r.IntN(3) == 0 {
			countdown.Store(int64(1 + r.IntN(3)))
		}
		var name string
		panicked := func() (p any) {
			defer func() { p = recover() }()
			switch op := r.IntN(20); op {
			case 0:
				name = "Lease"
				if l, err := s.Lease(cancelled); err == nil {
					leases = append(leases, l)
				}
			case 1:
				name = "Acquire"
				if v, err := s.Acquire(); err == nil {
					anon = append(anon, v.key)
				}
			case 2:
				name = "Lease.Release"
				onLease(func(l Lease[*randomResource, string]) error { return l.Release() })
			case 3:
				name = "Lease.Fail"
				onLease(func(l Lease[*randomResource, string]) error { return l.Fail() })
			case 4:
				name = "Lease.Cooldown"
				onLease(func(l Lease[*randomResource, string]) error { return l.Cooldown(dur()) })
			case 5:
				name = "Release"
				if len(anon) > 0 {
					i := r.IntN(len(anon))
					if err := s.Release(anon[i]); err == nil {
						anon = append(anon[:i], anon[i+1:]...)
					}
				}
			case 6:
				name = "Suspend"
				_ = s.Suspend(key(), dur())
			case 7:
				name = "Exclude"
				_ = s.Exclude(key())
			case 8:
				name = "Include"
				_ = s.Include(key())
			case 9:
				name = "Update"
				k := r.IntN(keys)
				_ = s.Update(newRes(k))
			case 10:
				name = "Remove"
				_ = s.Remove(key())
			case 11:
				name = "Add"
				_ = s.Add(newRes(r.IntN(keys)))
			case 12, 13:
				name = "Advance"
				// A panic in the timer's goroutine is not recovered by
				// a real clock: the comparator panics only in calls.
				countdown.Store(math.MinInt64 / 2)
				advance = true
				clock.Advance(time.Duration(r.IntN(1500)) * time.Millisecond)
			case 14:
				name = "Pause/Resume"
				if paused {
					clock.Resume()
				} else {
					clock.Pause()
				}
				paused = !paused
			case 15:
				name = "Lease with a cost"
				if l, err := s.Lease(cancelled, WithCost(config.Cost{"tok": int64(r.IntN(4))})); err == nil {
					leases = append(leases, l)
				}
			case 16:
				name = "Lease.Settle"
				useLease(func(l *Lease[*randomResource, string]) error { return l.Settle(config.Cost{"tok": int64(r.IntN(8))}) })
			case 17:
				name = "Lease.Observe"
				useLease(func(l *Lease[*randomResource, string]) error {
					return l.Observe("tok", int64(r.IntN(4)), time.Duration(r.IntN(1000))*time.Millisecond)
				})
			case 18:
				name = "Lease.Extend"
				useLease(func(l *Lease[*randomResource, string]) error { return l.Extend(dur()) })
			case 19:
				name = "BatchAdd"
				_ = s.BatchAdd([]*randomResource{newRes(r.IntN(keys)), newRes(r.IntN(keys))})
			}
			return nil
		}()
		countdown.Store(math.MinInt64 / 2)
		if panicked != nil && panicked != "comparator trap" {
			panic(panicked)
		}
		where := fmt.Sprintf("step %d (%s, panicked %v)", step, name, panicked != nil)
		if err := s.CheckInvariants(); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		t1 := s.now()
		evs := rec.take(s)
		resumes := map[string]int{}
		starts := map[string]int{}
		for _, e := range evs {
			switch e.Type {
			case events.EventResume:
				resumes[e.ID]++
			case events.EventSuspend, events.EventEject:
				starts[e.ID]++
			}
		}
		after := restsOf(s)
		seen := map[string]bool{}
		for n, b := range before {
			seen[n.Key] = true
			a, present := after[n]
			present = present && a.state != node.Draining
			restful := b.rest == node.Suspended || b.rest == node.Ejected
			gone := !present || a.rest != b.rest || a.until != b.until
			k := resumes[n.Key]
			switch {
			case panicked != nil && (k != 0 || a != b):
				return fmt.Errorf("%s: %s went from %+v to %+v with %d EventResume", where, n.Key, b, a, k)
			case !advance && restful && gone && present && b.until <= t0 && k != 1:
				return fmt.Errorf("%s: %s's ended %v (until %d, now %d) is gone, reported %d times", where, n.Key, b.rest, b.until, t0, k)
			case !advance && (!restful || !gone || !present || b.until > t0) && k != 0:
				return fmt.Errorf("%s: %s (%+v -> %+v, now %d) reported %d times", where, n.Key, b, a, t0, k)
			case advance && k > starts[n.Key]+boolInt(restful):
				return fmt.Errorf("%s: %s (%+v -> %+v) reported %d times for %d rests", where, n.Key, b, a, k, starts[n.Key]+boolInt(restful))
			case advance && restful && gone && present && b.until <= t1 && k == 0 &&
				!(starts[n.Key] > 0 && (a.rest == node.Suspended || a.rest == node.Ejected) && a.until > b.until): // not extended before it ended
				return fmt.Errorf("%s: %s's ended %v (until %d, now %d -> %d) is gone unreported: %+v -> %+v; events %v", where, n.Key, b.rest, b.until, t0, t1, b, a, evs)
			case advance && !paused && present && (a.rest == node.Suspended || a.rest == node.Ejected) && a.until <= t1:
				return fmt.Errorf("%s: %s's %v (until %d) is over at %d, its timer on time, and still there", where, n.Key, a.rest, a.until, t1)
			}
		}
		for id, k := range resumes {
			if !seen[id] && k > starts[id] {
				return fmt.Errorf("%s: %s, new, reported %d times", where, id, k)
			}
		}
	}
	if d := s.Stats().DroppedEvents; d != 0 {
		return fmt.Errorf("%d events dropped", d)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
