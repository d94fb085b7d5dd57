package waitload

import (
	"context"
	"sync/atomic"

	"github.com/jackc/puddle/v2"
)

// puddlePool is jackc/puddle, the pool under pgx: a semaphore for
// admission, a mutex-guarded idle stack, and resources built by a
// constructor. Here the constructor hands out the ids 0..n-1; all of them
// are built before the run so that construction is not measured.
type puddlePool struct{ p *puddle.Pool[int] }

func openPuddle(cfg Config) (pool[*puddle.Resource[int]], error) {
	var next atomic.Int64
	p, err := puddle.NewPool(&puddle.Config[int]{
		Constructor: func(context.Context) (int, error) { return int(next.Add(1) - 1), nil },
		Destructor:  func(int) {},
		MaxSize:     int32(cfg.Resources),
	})
	if err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Resources; i++ {
		if err := p.CreateResource(context.Background()); err != nil {
			p.Close()
			return nil, err
		}
	}
	return puddlePool{p}, nil
}

func (p puddlePool) acquire(ctx context.Context) (*puddle.Resource[int], error) {
	return p.p.Acquire(ctx)
}

func (p puddlePool) release(r *puddle.Resource[int]) error { r.Release(); return nil }
func (p puddlePool) resource(r *puddle.Resource[int]) int  { return r.Value() }
func (p puddlePool) close()                                { p.p.Close() }
