package scheduler_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

type Worker struct {
	ID       string
	Priority int // smaller is better
}

func workerConfig(policy config.AcquirePolicy) config.Config[*Worker, string] {
	return config.Config[*Worker, string]{
		Comparator:    func(a, b *Worker) int { return cmp.Compare(a.Priority, b.Priority) },
		KeyFunc:       func(w *Worker) string { return w.ID },
		AcquirePolicy: policy,
	}
}

// The quick start: the best resource comes first.
func Example() {
	sched, err := scheduler.New(config.Config[*Worker, string]{
		HeapCount:  1,
		Comparator: func(a, b *Worker) int { return cmp.Compare(a.Priority, b.Priority) },
		KeyFunc:    func(w *Worker) string { return w.ID },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sched.Shutdown()

	_ = sched.Add(&Worker{ID: "worker-1", Priority: 50})
	_ = sched.Add(&Worker{ID: "worker-2", Priority: 10})

	res, _ := sched.Acquire()
	fmt.Println("Acquired:", res.ID)
	// Output: Acquired: worker-2
}

// BatchAdd inserts all resources or none.
func Example_batch() {
	sched, _ := scheduler.New(workerConfig(config.Shared))
	defer sched.Shutdown()

	err := sched.BatchAdd([]*Worker{{ID: "a", Priority: 3}, {ID: "b", Priority: 1}})
	fmt.Println("first batch:", err, "len", sched.Len())

	err = sched.BatchAdd([]*Worker{{ID: "c", Priority: 2}, {ID: "a", Priority: 9}})
	fmt.Println("duplicate key:", errors.Is(err, crserrors.ErrDuplicateKey), "len", sched.Len())
	// Output:
	// first batch: <nil> len 2
	// duplicate key: true len 2
}

// Under the Shared policy every caller gets the best resource, which stays
// in the pool.
func Example_shared() {
	sched, _ := scheduler.New(workerConfig(config.Shared))
	defer sched.Shutdown()
	_ = sched.BatchAdd([]*Worker{{ID: "replica-a", Priority: 2}, {ID: "replica-b", Priority: 1}})

	for i := 0; i < 3; i++ {
		r, _ := sched.Acquire()
		fmt.Println(r.ID)
	}
	fmt.Println("active:", sched.Stats().ActiveResources)
	// Output:
	// replica-b
	// replica-b
	// replica-b
	// active: 2
}

// Under the Exclusive policy a resource leaves the pool until Release.
func Example_exclusive() {
	sched, _ := scheduler.New(workerConfig(config.Exclusive))
	defer sched.Shutdown()
	_ = sched.BatchAdd([]*Worker{{ID: "gpu-0", Priority: 1}, {ID: "gpu-1", Priority: 2}})

	a, _ := sched.Acquire()
	b, _ := sched.Acquire()
	_, err := sched.Acquire()
	fmt.Println(a.ID, b.ID, errors.Is(err, crserrors.ErrNoResourceAvailable))

	_ = sched.Release(a.ID)
	again, _ := sched.Acquire()
	fmt.Println("after release:", again.ID)
	// Output:
	// gpu-0 gpu-1 true
	// after release: gpu-0
}

// AcquireByAffinity sends the same identifier to the same place.
func Example_affinity() {
	cfg := workerConfig(config.Shared)
	cfg.HeapCount = 4
	sched, _ := scheduler.New(cfg)
	defer sched.Shutdown()
	for i := 0; i < 8; i++ {
		_ = sched.Add(&Worker{ID: fmt.Sprintf("key-%d", i), Priority: i})
	}

	first, _ := sched.AcquireByAffinity(acquire.StringIdentifier("session-7"))
	second, _ := sched.AcquireByAffinity(acquire.StringIdentifier("session-7"))
	fmt.Println("same resource:", first.ID == second.ID)
	// Output: same resource: true
}

// AcquireContext waits for a resource instead of failing, until its
// context ends.
func ExampleScheduler_AcquireContext() {
	sched, _ := scheduler.New(workerConfig(config.Exclusive))
	defer sched.Shutdown()
	_ = sched.Add(&Worker{ID: "gpu-0", Priority: 1})

	first, _ := sched.AcquireContext(context.Background())
	go func() { _ = sched.Release(first.ID) }() // another caller finishes

	second, err := sched.AcquireContext(context.Background()) // waits for the release
	fmt.Println(second.ID, err)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = sched.AcquireContext(ctx) // nobody releases: the context ends the wait
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// gpu-0 <nil>
	// true
}

// A Lease is released exactly once; a second Release is refused.
func ExampleScheduler_Lease() {
	sched, _ := scheduler.New(workerConfig(config.Exclusive))
	defer sched.Shutdown()
	_ = sched.Add(&Worker{ID: "key-1", Priority: 1})

	lease, err := sched.Lease(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leased", lease.Key())
	fmt.Println(lease.Release())
	fmt.Println(errors.Is(lease.Release(), crserrors.ErrLeaseReleased))
	// Output:
	// leased key-1
	// <nil>
	// true
}

// With Capacity, a resource takes several holders at once, and equally
// good resources share the load.
func Example_capacity() {
	cfg := workerConfig(config.Exclusive)
	cfg.Capacity = func(*Worker) int { return 2 } // two requests per replica
	sched, _ := scheduler.New(cfg)
	defer sched.Shutdown()
	_ = sched.BatchAdd([]*Worker{{ID: "replica-a", Priority: 1}, {ID: "replica-b", Priority: 1}})

	load := map[string]int{}
	for i := 0; i < 4; i++ {
		r, _ := sched.Acquire()
		load[r.ID]++
	}
	_, err := sched.Acquire()
	fmt.Println(load)
	fmt.Println("fifth:", errors.Is(err, crserrors.ErrNoResourceAvailable))
	// Output:
	// map[replica-a:2 replica-b:2]
	// fifth: true
}

type APIKey struct {
	ID        string
	Remaining int // quota left: more is better
	RPM       int // requests per minute the provider allows
}

// An API-key pool: the key with the most quota first, a 429 rests the key
// until its retry-after, repeated failures eject it, and no key is used
// faster than its RPM.
func Example_apiKeyPool() {
	sched, _ := scheduler.New(config.Config[*APIKey, string]{
		Comparator:    func(a, b *APIKey) int { return cmp.Compare(b.Remaining, a.Remaining) },
		KeyFunc:       func(k *APIKey) string { return k.ID },
		AcquirePolicy: config.Exclusive,
		RateLimit:     func(k *APIKey) (float64, int) { return float64(k.RPM) / 60, max(1, k.RPM/60) },
		Ejection:      config.Ejection{ConsecutiveFailures: 2, BaseTime: time.Minute, MaxTime: 10 * time.Minute},
	})
	defer sched.Shutdown()
	_ = sched.BatchAdd([]*APIKey{
		{ID: "key-a", Remaining: 900, RPM: 600},
		{ID: "key-b", Remaining: 500, RPM: 600},
		{ID: "key-c", Remaining: 100, RPM: 1},
	})
	ctx := context.Background()

	l, _ := sched.Lease(ctx)
	fmt.Println(l.Key(), "answered 429, retry after 30s")
	_ = l.Cooldown(30 * time.Second)

	for i := 0; i < 2; i++ {
		l, _ = sched.Lease(ctx)
		fmt.Println(l.Key(), "failed")
		_ = l.Fail()
	}

	l, _ = sched.Lease(ctx)
	fmt.Println(l.Key(), "served a request; quota left 99")
	_ = sched.Update(&APIKey{ID: "key-c", Remaining: 99, RPM: 1})
	_ = l.Release()

	_, err := sched.Acquire()
	st := sched.Stats()
	fmt.Println("next:", errors.Is(err, crserrors.ErrNoResourceAvailable))
	fmt.Printf("suspended %d, ejected %d, rate-limited %d\n",
		st.SuspendedResources, st.EjectedResources, st.RateLimitedResources)
	// Output:
	// key-a answered 429, retry after 30s
	// key-b failed
	// key-b failed
	// key-c served a request; quota left 99
	// next: true
	// suspended 1, ejected 1, rate-limited 1
}

// An API key with its provider's limits: a lease takes its estimated
// cost from the key's budgets when it is granted, and Settle replaces the
// estimate by what the call really spent, read from the response.
func ExampleLease_Settle() {
	type Key struct {
		Name     string
		RPM, TPM int64
	}
	sched, _ := scheduler.New(config.Config[*Key, string]{
		Comparator:    func(a, b *Key) int { return 0 },
		KeyFunc:       func(k *Key) string { return k.Name },
		AcquirePolicy: config.Shared,
		// A clock that moves only when told, so that no refill changes
		// the figures printed below; leave Clock nil in real use.
		Clock: fakeclock.New(),
		Limits: func(k *Key) []config.Limit {
			return []config.Limit{
				{Name: "requests", Max: k.RPM, Per: time.Minute},
				{Name: "tokens", Max: k.TPM, Per: time.Minute},
			}
		},
	})
	defer sched.Shutdown()
	_ = sched.Add(&Key{Name: "key-1", RPM: 600, TPM: 40000})

	// Prompt and max_tokens make an upper bound of 1500 tokens; the
	// request costs 1, the default for a limit the cost does not name.
	lease, err := sched.Lease(context.Background(), scheduler.WithCost(config.Cost{"tokens": 1500}))
	if err != nil {
		log.Fatal(err)
	}
	left, _ := sched.Remaining("key-1")
	fmt.Println("after the grant:", left["requests"], left["tokens"])

	// The response's usage block says 420 tokens: 1080 come back.
	_ = lease.Settle(config.Cost{"tokens": 420})
	_ = lease.Release()
	left, _ = sched.Remaining("key-1")
	fmt.Println("after Settle:", left["requests"], left["tokens"])

	// A call that can never fit any key fails at once.
	_, err = sched.Lease(context.Background(), scheduler.WithCost(config.Cost{"tokens": 50000}))
	fmt.Println(errors.Is(err, crserrors.ErrCostExceedsLimits))
	// Output:
	// after the grant: 599 38500
	// after Settle: 599 39580
	// true
}

// A gateway's tenants: teams share the keys' tokens by weight, a team
// may have a budget of its own, spent with the key's, and interactive
// calls go before batch ones.
func Example_tenants() {
	type Key struct {
		Name string
		TPM  int64
	}
	sched, _ := scheduler.New(config.Config[*Key, string]{
		Comparator:    func(a, b *Key) int { return 0 },
		KeyFunc:       func(k *Key) string { return k.Name },
		AcquirePolicy: config.Shared,
		Clock:         fakeclock.New(), // no refill during the example; leave nil in real use
		Limits: func(k *Key) []config.Limit {
			return []config.Limit{{Name: "tokens", Max: k.TPM, Per: time.Minute}}
		},
		ShareBy: "tokens", // shares counted in tokens, not calls
		Tenants: func(team string) config.Tenant {
			if team == "search" {
				return config.Tenant{Weight: 3, Limits: []config.Limit{{Name: "tokens", Max: 10_000, Per: time.Minute}}}
			}
			return config.Tenant{} // weight 1, no budget of its own
		},
	})
	defer sched.Shutdown()
	_ = sched.Add(&Key{Name: "key-1", TPM: 40_000})
	ctx := context.Background()

	// A batch job's call takes the key's whole minute.
	batch, _ := sched.Lease(ctx, scheduler.WithTenant("reports"), scheduler.WithCost(config.Cost{"tokens": 40_000}))

	served := make(chan string, 1)
	call := func(team string, prio int) {
		l, err := sched.Lease(ctx, scheduler.WithTenant(team), scheduler.WithPriority(prio),
			scheduler.WithCost(config.Cost{"tokens": 4_000}))
		if err == nil {
			_ = l.Release()
			served <- team
		}
	}
	go call("reports", 0) // another batch call waits first,
	waitersAre(sched, 1)
	go call("search", 5) // then an interactive one
	waitersAre(sched, 2)

	// The batch call spent 36,000: the 4,000 that come back go to the
	// interactive call, whatever came first.
	_ = batch.Settle(config.Cost{"tokens": 36_000})
	_ = batch.Release()
	fmt.Println("served:", <-served)

	// search's own budget is 10,000 tokens a minute: a call above it
	// fails at once, though the key could take it.
	_, err := sched.Lease(ctx, scheduler.WithTenant("search"), scheduler.WithCost(config.Cost{"tokens": 12_000}))
	fmt.Println(errors.Is(err, crserrors.ErrCostExceedsLimits))
	for _, t := range sched.Stats().Tenants {
		fmt.Printf("%s: %d tokens, %d waiting\n", t.Name, t.Usage, t.Waiters)
	}
	// Output:
	// served: search
	// true
	// reports: 36000 tokens, 1 waiting
	// search: 4000 tokens, 0 waiting
}

// waitersAre returns once n callers wait in s.
func waitersAre[T any, ID comparable](s *scheduler.Scheduler[T, ID], n int) {
	for s.Stats().Waiters != n {
		runtime.Gosched()
	}
}
