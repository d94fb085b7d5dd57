package waitload

import "context"

// channelPool is the baseline every Go programmer writes first: a buffered
// channel holding the free resources. The runtime queues blocked receivers
// in order and a send hands the value straight to the first of them, so
// this is the reference for both hand-off latency and CPU per request.
type channelPool struct{ free chan int }

func openChannel(cfg Config) (pool[int], error) {
	free := make(chan int, cfg.Resources)
	for i := 0; i < cfg.Resources; i++ {
		free <- i
	}
	return channelPool{free}, nil
}

func (p channelPool) acquire(ctx context.Context) (int, error) {
	select {
	case r := <-p.free:
		return r, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (p channelPool) release(r int) error { p.free <- r; return nil }
func (p channelPool) resource(r int) int  { return r }
func (p channelPool) close()              {}
