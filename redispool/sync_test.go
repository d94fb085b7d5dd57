package redispool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// configOf is the pool's configuration as the server holds it: ID ->
// priority and capacity, for the resources that are not draining.
func configOf(t *testing.T, p *Pool) map[string]string {
	t.Helper()
	got := map[string]string{}
	for id, r := range readState(t, p.client, p).resources {
		if !r.draining {
			got[id] = fmt.Sprintf("%s/%d", r.priority, r.capacity)
		}
	}
	return got
}

func TestSyncAddsUpdatesAndRemovesAndIsIdempotent(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "same", Priority: 1}, Resource{ID: "changed", Priority: 2},
		Resource{ID: "gone", Priority: 3}, Resource{ID: "held", Priority: 0})
	if err := p.Exclude(ctx, "same"); err != nil {
		t.Fatal(err)
	}
	held := mustAcquire(t, p)
	if held.ID != "held" {
		t.Fatalf("leased %s, want held", held.ID)
	}
	want := []Resource{
		{ID: "same", Priority: 1},
		{ID: "changed", Priority: 0.5, Capacity: 3},
		{ID: "new\x00id", Priority: -1, Capacity: 2},
	}
	for range 2 {
		if err := p.Sync(ctx, want); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		if got := configOf(t, p); !reflect.DeepEqual(got, map[string]string{
			"same": "1/1", "changed": "0.5/3", "new\x00id": "-1/2",
		}) {
			t.Fatalf("after Sync: %q", got)
		}
		// The excluded resource stays excluded; the leased one that Sync
		// removed drains; the others are available.
		if s := stats(t, p); s.Resources != 3 || s.Excluded != 1 || s.Available != 2 || s.Draining != 1 || s.Leases != 1 {
			t.Fatalf("stats after Sync: %+v", s)
		}
		checkInvariants(t, c, p)
	}
	// Best first: the new resource (-1), then the changed one (0.5).
	for _, id := range []string{"new\x00id", "new\x00id", "changed"} {
		if l := mustAcquire(t, p); l.ID != id {
			t.Fatalf("leased %q, want %q", l.ID, id)
		}
	}
	mustRelease(t, held) // the drained resource leaves with its lease
	if s := stats(t, p); s.Draining != 0 || s.Resources != 3 {
		t.Fatalf("stats after the drained lease ended: %+v", s)
	}
	checkInvariants(t, c, p)
}

func TestSyncRefusesBadInputAndChangesNothing(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a", Priority: 1})
	before := readState(t, c, p)
	for _, tc := range []struct {
		rs   []Resource
		want error
	}{
		{[]Resource{{ID: "b"}, {ID: "b", Priority: 1}}, crserrors.ErrDuplicateKey},
		{[]Resource{{ID: "b"}, {ID: ""}}, ErrInvalidID},
		{[]Resource{{ID: "b", Priority: math.NaN()}}, ErrInvalidPriority},
		{[]Resource{{ID: "b", Priority: math.Inf(-1)}}, ErrInvalidPriority},
		{[]Resource{{ID: "b", Capacity: MaxCapacity + 1}}, ErrInvalidCapacity},
	} {
		if err := p.Sync(context.Background(), tc.rs); !errors.Is(err, tc.want) {
			t.Errorf("Sync(%+v): %v, want %v", tc.rs, err, tc.want)
		}
	}
	if after := readState(t, c, p); !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused Sync changed the pool: %+v, was %+v", after, before)
	}
}

func TestSyncBringsBackADrainingResourceWithItsLeases(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2})
	first := mustAcquire(t, p)
	if err := p.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(ctx, []Resource{{ID: "a", Capacity: 2}}); err != nil {
		t.Fatal(err)
	}
	// Back with one slot held: one more lease, not two.
	second := mustAcquire(t, p)
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) || errors.Is(err, ErrPoolEmpty) {
		t.Fatalf("third lease of a capacity-2 resource: %v", err)
	}
	mustRelease(t, first)
	mustRelease(t, second)
	if s := stats(t, p); s.Resources != 1 || s.Available != 1 || s.Draining != 0 {
		t.Fatalf("stats: %+v", s)
	}
	checkInvariants(t, c, p)
}

func TestSyncLowersACapacityAsLeasesEndAndWakesWaitersForARaise(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2})
	l1, l2 := mustAcquire(t, p), mustAcquire(t, p)
	if err := p.Sync(ctx, []Resource{{ID: "a", Capacity: 1}}); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, l1)
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("lease beyond the lowered capacity: %v", err)
	}
	checkInvariants(t, c, p)
	// A raise frees slots, announced like a release.
	startHub(t, p)
	parked := parkings(p)
	waiting := acquireAsync(p)
	receive(t, parked, "the waiter to block")
	if err := p.Sync(ctx, []Resource{{ID: "a", Capacity: 3}}); err != nil {
		t.Fatal(err)
	}
	r := <-waiting
	if r.err != nil {
		t.Fatalf("Acquire woken by a raised capacity: %v", r.err)
	}
	mustRelease(t, r.lease)
	mustRelease(t, l2)
	checkInvariants(t, c, p)
}

// Every replica Syncs the same configuration while others lease and
// release: the pool converges to it, with no lease lost or doubled.
func TestConcurrentSyncsFromSeveralClientsConverge(t *testing.T) {
	needRedis(t)
	name := poolName(t)
	want := []Resource{{ID: "a", Capacity: 2}, {ID: "b", Priority: 1}, {ID: "c", Priority: 2, Capacity: 3}}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var pools []*Pool
	for i := range 4 {
		p := newPool(t, clientOf(t, testAddr), Options{Name: name})
		pools = append(pools, p)
		// Each replica starts with its own stale view of the pool.
		_ = p.Add(ctx, Resource{ID: fmt.Sprintf("stale-%d", i)})
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := p.Sync(ctx, want); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				l, err := p.TryAcquire(ctx)
				if errors.Is(err, crserrors.ErrNoResourceAvailable) {
					continue
				}
				if err == nil {
					err = l.Release(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p := pools[0]
	if got := configOf(t, p); !reflect.DeepEqual(got, map[string]string{"a": "0/2", "b": "1/1", "c": "2/3"}) {
		t.Fatalf("after concurrent Syncs: %q", got)
	}
	if s := stats(t, p); s.Leases != 0 || s.Draining != 0 || s.Available != 3 {
		t.Fatalf("stats: %+v", s)
	}
	checkInvariants(t, p.client, p)
}

func TestAcquireOnAPoolWithNoResourcesSaysSoAtOnce(t *testing.T) {
	needRedis(t)
	c, hook := hooked(t, testAddr)
	p := newPool(t, c, Options{RecheckInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	loadScripts(t, c)
	n := hook.count()
	if _, err := p.TryAcquire(ctx); !errors.Is(err, ErrPoolEmpty) || !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire on a pool never filled: %v, want ErrPoolEmpty and ErrNoResourceAvailable", err)
	}
	if _, err := p.Acquire(ctx); !errors.Is(err, ErrPoolEmpty) {
		t.Fatalf("Acquire on a pool never filled: %v, want ErrPoolEmpty", err)
	}
	p.bg.Wait()
	// One script each: nothing was granted, so nothing is given back.
	if got := hook.since(n); !equal(got, []string{"evalsha", "evalsha"}) {
		t.Fatalf("TryAcquire and Acquire on an empty pool sent %v", got)
	}
	// A pool emptied while Acquire waits: the waiter says so at its
	// next look.
	add(t, p, Resource{ID: "a"})
	held := mustAcquire(t, p)
	parked := parkings(p)
	waiting := acquireAsync(p)
	receive(t, parked, "the waiter to block")
	if err := p.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if r := <-waiting; !errors.Is(r.err, ErrPoolEmpty) {
		t.Fatalf("Acquire waiting while the pool was emptied: %v, %v; want ErrPoolEmpty", r.lease, r.err)
	}
	// A pool whose resources are all excluded is not empty: Acquire
	// waits.
	if err := p.Sync(ctx, []Resource{{ID: "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Exclude(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if _, err := p.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a pool of excluded resources: %v, want the deadline", err)
	}
	mustRelease(t, held)
}

// The waiters of a pool whose last resource goes are told, in every
// process, and return ErrPoolEmpty without waiting for their re-check
// (an hour here): whether the resource leaves at once (no lease) or
// drains (its lease runs on, but no waiter can ever get it).
func TestWaitersAreToldWhenTheLastResourceGoes(t *testing.T) {
	for _, leased := range []bool{false, true} {
		name := "excluded, no lease"
		if leased {
			name = "leased, draining"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{RecheckInterval: time.Hour}
			a := newPool(t, newClient(t), opts)
			opts.Name = a.name
			b := newPool(t, newClient(t), opts)
			add(t, a, Resource{ID: "r"})
			var held *Lease
			if leased {
				held = mustAcquire(t, a)
			} else if err := a.Exclude(ctx, "r"); err != nil {
				t.Fatal(err)
			}
			parkedA, parkedB := parkings(a), parkings(b)
			startHub(t, a)
			startHub(t, b)
			waitA := queueAsync(t, a, parkedA)
			waitB := queueAsync(t, b, parkedB)
			if err := a.Remove(ctx, "r"); err != nil {
				t.Fatal(err)
			}
			for i, ch := range []<-chan acquired{waitA, waitB} {
				select {
				case r := <-ch:
					if !errors.Is(r.err, ErrPoolEmpty) {
						t.Fatalf("waiter %d: %v, %v; want ErrPoolEmpty", i, r.lease, r.err)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("waiter %d not told that the pool is empty", i)
				}
			}
			if held != nil {
				mustRelease(t, held)
			}
			a.bg.Wait()
			b.bg.Wait()
			if keys := poolKeys(t, newClient(t), a); len(keys) != 0 {
				t.Fatalf("keys left: %v", keys)
			}
		})
	}
}

// A Sync of the resources that the last Sync gave, when nothing has
// changed them since, sends their digest alone; any change (Update,
// Remove, an Add, another process's Sync) makes the next one apply.
func TestASyncThatWouldChangeNothingSendsOnlyItsDigest(t *testing.T) {
	needRedis(t)
	c, hook := hooked(t, testAddr)
	p := newPool(t, c, Options{})
	stats(t, p) // connects and loads the library
	other := newPool(t, newClient(t), Options{Name: p.name})
	ctx := context.Background()
	rs := []Resource{{ID: "a", Priority: 1}, {ID: "b", Priority: 2, Capacity: 2}}
	syncSent := func(rs []Resource) []string {
		t.Helper()
		n := hook.count()
		if err := p.Sync(ctx, rs); err != nil {
			t.Fatal(err)
		}
		return hook.since(n)
	}
	first := func(want string) {
		t.Helper()
		l := mustAcquire(t, p)
		if l.ID != want {
			t.Fatalf("first lease on %s, want %s", l.ID, want)
		}
		mustRelease(t, l)
	}
	if sent := syncSent(rs); len(sent) != 2 {
		t.Fatalf("a first Sync sent %v, want its digest and the resources", sent)
	}
	if sent := syncSent([]Resource{rs[1], rs[0]}); len(sent) != 1 {
		t.Fatalf("the same Sync, in another order, sent %v, want its digest alone", sent)
	}
	if err := p.Update(ctx, "a", 3); err != nil {
		t.Fatal(err)
	}
	first("b")
	if sent := syncSent(rs); len(sent) != 2 {
		t.Fatalf("a Sync after an Update sent %v, want the resources too", sent)
	}
	first("a")
	if err := p.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	syncSent(rs)
	first("a")
	if err := other.Sync(ctx, rs[:1]); err != nil {
		t.Fatal(err)
	}
	if sent := syncSent(rs); len(sent) != 2 {
		t.Fatalf("a Sync after another's sent %v, want the resources too", sent)
	}
	if s := stats(t, p); s.Resources != 2 {
		t.Fatalf("stats after the Syncs: %+v", s)
	}
	l := mustAcquire(t, p)
	if err := p.Remove(ctx, l.ID); err != nil { // drains
		t.Fatal(err)
	}
	syncSent(rs) // back, its lease running on
	mustRelease(t, l)
	if s := stats(t, p); s.Resources != 2 || s.Draining != 0 {
		t.Fatalf("stats after a drained resource came back: %+v", s)
	}
	checkInvariants(t, c, p)
}

// A Sync that sends its digest alone leaves the pool as the whole
// reconciliation would: after random operations (adds, updates,
// removals, leases and their ends, exclusions, suspensions, costs,
// drains and returns), each Sync that was answered by its digest is
// followed by the full script, which must change nothing.
func TestASyncAnsweredByItsDigestLeavesWhatTheFullSyncWould(t *testing.T) {
	needRedis(t)
	c, hook := hooked(t, testAddr)
	p := newPool(t, c, Options{LeaseTTL: time.Hour}) // no lease expires mid-run
	ctx := context.Background()
	ids := []string{"a", "b", "c", "d"}
	limitSets := [][]config.Limit{nil, {tokens(10)}, {tokens(20)}, {tokens(10), requests(3)}, {requests(3), tokens(10)}}
	random := func(rng *rand.Rand, id string) Resource {
		return Resource{ID: id, Priority: float64(rng.IntN(2)), Capacity: 1 + rng.IntN(2), Limits: limitSets[rng.IntN(len(limitSets))]}
	}
	answered := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var leases []*Lease
		var last []Resource
		for range 60 {
			id := ids[rng.IntN(len(ids))]
			switch rng.IntN(12) {
			case 0:
				_ = p.Add(ctx, random(rng, id))
			case 1:
				_ = p.Update(ctx, id, float64(rng.IntN(2)))
			case 2:
				_ = p.Remove(ctx, id)
			case 3:
				_ = p.Exclude(ctx, id)
			case 4:
				_ = p.Suspend(ctx, id, day)
			case 5, 6:
				var opts []AcquireOption
				if rng.IntN(2) == 0 {
					// Allowed: the pool may have no tokens limit at times.
					opts = append(opts, WithCost(config.Cost{"tokens": int64(1 + rng.IntN(15))}), AllowUnknownLimits())
				}
				if l, err := p.TryAcquire(ctx, opts...); err == nil {
					leases = append(leases, l)
				}
			case 7, 8:
				if len(leases) == 0 {
					break
				}
				i := rng.IntN(len(leases))
				switch l := leases[i]; rng.IntN(4) {
				case 0:
					_ = l.Settle(ctx, config.Cost{"tokens": int64(rng.IntN(12))}) // the lease runs on
					continue
				case 1:
					_ = l.Fail(ctx)
				case 2:
					_ = l.Cooldown(ctx, day)
				default:
					_ = l.Release(ctx)
				}
				leases = append(leases[:i], leases[i+1:]...)
			default:
				rs := last
				if last == nil || rng.IntN(2) == 0 {
					rs = nil
					for _, id := range ids {
						if rng.IntN(2) == 0 {
							rs = append(rs, random(rng, id))
						}
					}
				}
				last = rs
				n := hook.count()
				if err := p.Sync(ctx, rs); err != nil {
					t.Fatal(err)
				}
				if len(hook.since(n)) > 1 {
					break
				}
				answered++
				before := readState(t, c, p)
				args, err := syncArgs(rs)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := p.run(ctx, scriptSync, newRequest(), args...); err != nil {
					t.Fatal(err)
				}
				if after := readState(t, c, p); !reflect.DeepEqual(before, after) {
					t.Fatalf("seed %d: a Sync of %+v answered by its digest left\n%+v\nwhich the full Sync changes to\n%+v", seed, rs, before, after)
				}
			}
			if len(leases) == 0 { // a lowered capacity may leave more holders until then
				checkInvariants(t, c, p)
			}
		}
		for _, l := range leases {
			mustRelease(t, l)
		}
		checkInvariants(t, c, p)
		if err := p.Sync(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if answered == 0 {
		t.Fatal("no Sync was answered by its digest")
	}
}

// Sync refuses an ID that appears twice, wherever the two are in rs,
// and an invalid resource, before it sends anything.
func TestASyncOfBadResourcesSendsNothing(t *testing.T) {
	needRedis(t)
	c, hook := hooked(t, testAddr)
	p := newPool(t, c, Options{})
	for _, tc := range []struct {
		rs   []Resource
		want error
	}{
		{[]Resource{{ID: "b"}, {ID: "a"}, {ID: "c"}, {ID: "b", Priority: 1}}, crserrors.ErrDuplicateKey},
		{[]Resource{{ID: "b"}, {ID: "a", Priority: math.NaN()}}, ErrInvalidPriority},
		{[]Resource{{ID: "b"}, {ID: ""}}, ErrInvalidID},
	} {
		n := hook.count()
		if err := p.Sync(context.Background(), tc.rs); !errors.Is(err, tc.want) {
			t.Fatalf("Sync(%+v): %v, want %v", tc.rs, err, tc.want)
		}
		if sent := hook.since(n); len(sent) != 0 {
			t.Fatalf("Sync(%+v) sent %v", tc.rs, sent)
		}
	}
	if s := stats(t, p); s.Resources != 0 {
		t.Fatalf("stats after the refused Syncs: %+v", s)
	}
}
