package scheduler_test

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// ledger is the test's own account of the pool: which keys exist and how
// many callers hold each. Keys are never reused (a removed key comes back
// under a new generation), so a stale holder can't release a newer
// resource that happens to share its key.
type ledger struct {
	mu      sync.Mutex
	holders map[string]*atomic.Int32
	keys    []string
	next    atomic.Int64
	added   atomic.Int64
	removed atomic.Int64
}

func (l *ledger) newKey() string {
	k := fmt.Sprintf("r%d", l.next.Add(1))
	l.mu.Lock()
	l.holders[k] = new(atomic.Int32)
	l.keys = append(l.keys, k)
	l.mu.Unlock()
	return k
}

func (l *ledger) randomKey(rng *rand.Rand) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys[rng.Intn(len(l.keys))]
}

func (l *ledger) counter(k string) *atomic.Int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holders[k]
}

// allowed reports whether err is one an operation may legitimately return
// while other goroutines change the same resource.
func allowed(err error, sentinels ...error) bool {
	if err == nil {
		return true
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func TestStressEveryOperationKeepsTheStateModel(t *testing.T) {
	for _, tc := range []struct {
		heaps  int
		policy config.AcquirePolicy
	}{{1, config.Exclusive}, {8, config.Exclusive}, {8, config.Shared}} {
		t.Run(fmt.Sprintf("%s/%d", tc.policy, tc.heaps), func(t *testing.T) {
			stress(t, tc.heaps, tc.policy)
		})
	}
}

func stress(t *testing.T, heaps int, policy config.AcquirePolicy) {
	const goroutines, opsEach, initial = 8, 5000, 64
	s := newScheduler(t, baseConfig(heaps, policy))
	l := &ledger{holders: map[string]*atomic.Int32{}}
	for i := 0; i < initial; i++ {
		addAll(t, s, w(l.newKey(), i))
	}
	l.added.Store(initial)
	exclusive := policy == config.Exclusive

	var wg sync.WaitGroup
	failures := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			var held []string
			fail := func(format string, args ...any) {
				failures <- fmt.Errorf(format, args...)
			}
			for i := 0; i < opsEach; i++ {
				switch op := rng.Intn(100); {
				case op < 35:
					v, err := s.Acquire()
					if err != nil {
						if !errors.Is(err, crserrors.ErrNoResourceAvailable) {
							fail("Acquire: %v", err)
							return
						}
						continue
					}
					if exclusive {
						if n := l.counter(v.ID).Add(1); n != 1 {
							fail("%s granted to %d holders at once", v.ID, n)
							return
						}
						held = append(held, v.ID)
					}
				case op < 65:
					if len(held) == 0 {
						continue
					}
					k := held[len(held)-1]
					held = held[:len(held)-1]
					l.counter(k).Add(-1)
					if err := s.Release(k); !allowed(err, crserrors.ErrResourceNotFound) {
						fail("Release(%s): %v", k, err)
						return
					}
				case op < 75:
					k := l.randomKey(rng)
					if err := s.Update(w(k, rng.Intn(1000))); !allowed(err, crserrors.ErrResourceNotFound) {
						fail("Update(%s): %v", k, err)
						return
					}
				case op < 82:
					k := l.randomKey(rng)
					if err := s.Exclude(k); !allowed(err, crserrors.ErrResourceNotFound, crserrors.ErrResourceNotActive) {
						fail("Exclude(%s): %v", k, err)
						return
					}
				case op < 90:
					k := l.randomKey(rng)
					if err := s.Include(k); !allowed(err, crserrors.ErrResourceNotFound, crserrors.ErrResourceNotInactive, crserrors.ErrResourceNotExcluded) {
						fail("Include(%s): %v", k, err)
						return
					}
				case op < 94:
					k := l.randomKey(rng)
					err := s.Remove(k)
					if !allowed(err, crserrors.ErrResourceNotFound) {
						fail("Remove(%s): %v", k, err)
						return
					}
					if err == nil {
						l.removed.Add(1)
						if err := s.Add(w(l.newKey(), rng.Intn(1000))); err != nil {
							fail("Add: %v", err)
							return
						}
						l.added.Add(1)
					}
				case op < 97:
					batch := []*worker{w(l.newKey(), rng.Intn(1000)), w(l.newKey(), rng.Intn(1000))}
					if err := s.BatchAdd(batch); err != nil {
						fail("BatchAdd: %v", err)
						return
					}
					l.added.Add(2)
				default:
					k := l.randomKey(rng)
					if v, err := s.Get(k); err == nil && v.ID != k {
						fail("Get(%s) returned %s", k, v.ID)
						return
					} else if !allowed(err, crserrors.ErrResourceNotFound) {
						fail("Get(%s): %v", k, err)
						return
					}
				}
			}
			for _, k := range held {
				l.counter(k).Add(-1)
				if err := s.Release(k); !allowed(err, crserrors.ErrResourceNotFound) {
					fail("final Release(%s): %v", k, err)
				}
			}
		}(int64(g))
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	checkAccounts(t, s, int(l.added.Load()-l.removed.Load()))
}

func checkAccounts(t *testing.T, s *scheduler.Scheduler[*worker, string], want int) {
	t.Helper()
	mustInvariants(t, s)
	if s.Len() != want {
		t.Fatalf("Len = %d, want added - removed = %d", s.Len(), want)
	}
	st := s.Stats()
	if st.TotalResources != want || st.HeldResources != 0 ||
		st.ActiveResources+st.ExcludedResources != want {
		t.Fatalf("stats %+v inconsistent with %d resources, none held", st, want)
	}
}
