package redispool

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// benchClient is a client of the test Redis whose commands are counted
// (including the few that open each connection); its connection pool
// has a connection per goroutine.
func benchClient(b *testing.B, conns int) (*redis.Client, *countHook) {
	needRedis(b)
	c := redis.NewClient(&redis.Options{Addr: testAddr, PoolSize: max(conns, 10)})
	b.Cleanup(func() { _ = c.Close() })
	h := &countHook{}
	c.AddHook(h)
	return c, h
}

// BenchmarkAcquireRelease: round trips of Acquire + Release per second
// against the local server, uncontended (more resources than
// goroutines), the client commands each costs, and the time the server
// spent running its scripts.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, goroutines := range []int{1, 32} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			benchAcquireRelease(b, goroutines, 64)
		})
	}
}

// BenchmarkAcquireReleaseContended: 32 goroutines on 4 resources, so
// that most Acquire calls wait.
func BenchmarkAcquireReleaseContended(b *testing.B) {
	benchAcquireRelease(b, 32, 4)
}

func benchAcquireRelease(b *testing.B, goroutines, resources int) {
	c, hook := benchClient(b, goroutines)
	p := newPool(b, c, Options{})
	for i := range resources {
		add(b, p, Resource{ID: fmt.Sprintf("r%d", i)})
	}
	mustRelease(b, mustAcquire(b, p)) // load the scripts
	ctx := context.Background()
	_, usec := commandStats(b, c, "evalsha")
	before := hook.n.Load()
	roundTrip := func() bool {
		l, err := p.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			b.Error(err)
		}
		return err == nil
	}
	start := time.Now()
	b.ResetTimer()
	if goroutines == 1 {
		for i := 0; i < b.N && roundTrip(); i++ {
		}
	} else {
		// RunParallel runs parallelism x GOMAXPROCS goroutines.
		b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() && roundTrip() {
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "round-trips/s")
	b.ReportMetric(float64(hook.n.Load()-before)/float64(b.N), "cmds/op")
	_, after := commandStats(b, c, "evalsha")
	b.ReportMetric(float64(after-usec)/float64(b.N), "server-µs/op")
}

// BenchmarkAcquireReleaseWaitReplicas: Acquire + Release from one
// goroutine on a primary with one replica (both on loopback), without
// and with WaitReplicas: what the WAIT after each grant costs.
func BenchmarkAcquireReleaseWaitReplicas(b *testing.B) {
	primary := ownServer(b)
	ownReplica(b, primary)
	for _, n := range []int{0, 1} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			c := clientOf(b, primary.addr)
			p := newPool(b, c, Options{WaitReplicas: n})
			add(b, p, Resource{ID: "a"})
			mustRelease(b, mustAcquire(b, p)) // load the scripts
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				l, err := p.Acquire(ctx)
				if err == nil {
					err = l.Release(ctx)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBaselinePing: one PING round trip on the same client and
// server, the floor under every figure above.
func BenchmarkBaselinePing(b *testing.B) {
	c, _ := benchClient(b, 1)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWakeLatency: one client releases, another (its own
// connections and subscription, as another process would have) is
// waiting in Acquire; the time from the start of Release to the return
// of Acquire.
func BenchmarkWakeLatency(b *testing.B) {
	c, _ := benchClient(b, 1)
	wc, _ := benchClient(b, 1)
	holder := newPool(b, c, Options{})
	waiter := newPool(b, wc, Options{Name: holder.name})
	add(b, holder, Resource{ID: "a"})
	ctx := context.Background()
	parked := make(chan struct{}, 1)
	waiter.onParked(func() {
		select {
		case parked <- struct{}{}:
		default:
		}
	})
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		held := mustAcquire(b, holder)
		got := make(chan time.Time, 1) // when woken, sent once released
		go func() {
			l, err := waiter.Acquire(ctx)
			if err != nil {
				b.Error(err)
				got <- time.Time{}
				return
			}
			woken := time.Now()
			if err := l.Release(ctx); err != nil {
				b.Error(err)
			}
			got <- woken
		}()
		<-parked
		released := time.Now()
		mustRelease(b, held)
		latencies = append(latencies, (<-got).Sub(released))
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	q := func(f float64) float64 {
		return float64(latencies[int(f*float64(len(latencies)-1))].Microseconds())
	}
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}
