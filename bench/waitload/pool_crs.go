package waitload

import (
	"cmp"
	"context"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// crsScheduler builds the scheduler under test: the Exclusive policy, with
// resources 0..n-1 as their own keys and lower numbers handed out first.
// The resources are plain ints so that the pool measures the scheduler,
// not a user type.
func crsScheduler(cfg Config) (*scheduler.Scheduler[int, int], error) {
	s, err := scheduler.New(config.Config[int, int]{
		HeapCount:     cfg.HeapCount,
		Comparator:    cmp.Compare[int],
		KeyFunc:       func(v int) int { return v },
		AcquirePolicy: config.Exclusive,
	})
	if err != nil {
		return nil, err
	}
	ids := make([]int, cfg.Resources)
	for i := range ids {
		ids[i] = i
	}
	if err := s.BatchAdd(ids); err != nil {
		s.Shutdown()
		return nil, err
	}
	return s, nil
}

// crsPool is the scheduler used as the users use it:
// AcquireContext to wait, Release(id) to give back.
type crsPool struct {
	s *scheduler.Scheduler[int, int]
}

func openCRS(cfg Config) (pool[int], error) {
	s, err := crsScheduler(cfg)
	if err != nil {
		return nil, err
	}
	return crsPool{s}, nil
}

func (p crsPool) acquire(ctx context.Context) (int, error) { return p.s.AcquireContext(ctx) }
func (p crsPool) release(id int) error                     { return p.s.Release(id) }
func (p crsPool) resource(id int) int                      { return id }
func (p crsPool) close()                                   { p.s.Shutdown() }

// crsLeasePool is the same scheduler through leases (Lease and
// Lease.Release), whose token-based bookkeeping costs a little more per
// request than an anonymous hold.
type crsLeasePool struct {
	s *scheduler.Scheduler[int, int]
}

func openCRSLease(cfg Config) (pool[scheduler.Lease[int, int]], error) {
	s, err := crsScheduler(cfg)
	if err != nil {
		return nil, err
	}
	return crsLeasePool{s}, nil
}

func (p crsLeasePool) acquire(ctx context.Context) (scheduler.Lease[int, int], error) {
	return p.s.Lease(ctx)
}
func (p crsLeasePool) release(l scheduler.Lease[int, int]) error { return l.Release() }
func (p crsLeasePool) resource(l scheduler.Lease[int, int]) int  { return l.Value() }
func (p crsLeasePool) close()                                    { p.s.Shutdown() }
