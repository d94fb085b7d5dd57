package waitload

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/semaphore"
)

// semaphorePool is a weighted semaphore (FIFO, one allocation per wait)
// counting the free resources, plus a mutex-guarded free list saying which
// ones: the common hand-made pool when a channel is not enough.
type semaphorePool struct {
	sem  *semaphore.Weighted
	mu   sync.Mutex
	free []int
}

func openSemaphore(cfg Config) (pool[int], error) {
	p := &semaphorePool{sem: semaphore.NewWeighted(int64(cfg.Resources))}
	for i := 0; i < cfg.Resources; i++ {
		p.free = append(p.free, i)
	}
	return p, nil
}

func (p *semaphorePool) acquire(ctx context.Context) (int, error) {
	if err := p.sem.Acquire(ctx, 1); err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free)
	if n == 0 { // cannot happen while the semaphore counts right
		p.sem.Release(1)
		return 0, errors.New("semaphore pool: permit without a free resource")
	}
	r := p.free[n-1]
	p.free = p.free[:n-1]
	return r, nil
}

func (p *semaphorePool) release(r int) error {
	p.mu.Lock()
	p.free = append(p.free, r)
	p.mu.Unlock()
	p.sem.Release(1)
	return nil
}

func (p *semaphorePool) resource(r int) int { return r }
func (p *semaphorePool) close()             {}
