package scheduler_test

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// wide is a value of three words: not word-shaped, so the readers that
// take no lock read a copy of it, made when its node is a shard's top.
// sum ties its fields, so a reader handed a copy in part written sees
// them disagree.
type wide struct{ key, priority, sum int }

func wideOf(key, priority int) wide { return wide{key, priority, 31*key + priority} }

// Lock-free readers (the Shared policy's Acquire, GlobalOrder's
// comparison of shard tops) meet nodes whose copies are made lazily, on
// first publish: while other goroutines add, update, remove and add
// again, every value a reader is handed is whole and one that its key
// had.
func TestLockFreeReadersSeeWholeCopiesWhileNodesChange(t *testing.T) {
	for _, c := range []struct {
		policy config.AcquirePolicy
		order  config.Ordering
	}{{config.Shared, config.ShardOrder}, {config.Shared, config.GlobalOrder}, {config.Exclusive, config.GlobalOrder}} {
		t.Run(fmt.Sprintf("%v/%v", c.policy, c.order), func(t *testing.T) {
			const keys, writers, readers, rounds = 64, 3, 4, 2000
			s, err := scheduler.New(config.Config[wide, int]{
				HeapCount:     4,
				Comparator:    func(a, b wide) int { return a.priority - b.priority },
				KeyFunc:       func(v wide) int { return v.key },
				AcquirePolicy: c.policy,
				Ordering:      c.order,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown()
			batch := make([]wide, keys)
			for i := range batch {
				batch[i] = wideOf(i, i)
			}
			if err := s.BatchAdd(batch); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(w)))
					for range rounds {
						k := rng.Intn(keys)
						var err error
						switch rng.Intn(4) {
						case 0, 1:
							err = s.Update(wideOf(k, rng.Intn(1000)-500))
						case 2:
							err = s.Remove(k)
						case 3:
							err = s.Add(wideOf(k, rng.Intn(1000)-500))
						}
						if err != nil && !errors.Is(err, crserrors.ErrResourceNotFound) &&
							!errors.Is(err, crserrors.ErrDuplicateKey) && !errors.Is(err, crserrors.ErrResourceDraining) {
							t.Error(err)
							return
						}
					}
				}()
			}
			for range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						v, err := s.Acquire()
						if errors.Is(err, crserrors.ErrNoResourceAvailable) {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						if v.sum != 31*v.key+v.priority {
							t.Errorf("Acquire returned a torn value %+v", v)
							return
						}
						if c.policy == config.Exclusive {
							if err := s.Release(v.key); err != nil && !errors.Is(err, crserrors.ErrResourceNotFound) {
								t.Error(err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			if err := s.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
