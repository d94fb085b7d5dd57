package compare

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// The baselines are only worth comparing against if they do what crs does;
// these tests hold both to the library's semantics.

// pool is what the tests ask of a baseline.
type pool interface {
	Add(*worker) error
	BatchAdd([]*worker) error
	Update(*worker) error
	Acquire() (*worker, error)
	Release(string) error
	Len() int
	check() error // the heap order, the items' indexes and the key map agree
}

var baselines = []struct {
	name string
	new  func(config.AcquirePolicy) pool
}{
	{"tight", func(p config.AcquirePolicy) pool { return newTight(p) }},
	{"heap", func(p config.AcquirePolicy) pool { return newHeap(p) }},
}

func forEachBaseline(t *testing.T, test func(t *testing.T, newPool func(config.AcquirePolicy) pool)) {
	for _, bl := range baselines {
		t.Run(bl.name, func(t *testing.T) {
			newPool := func(policy config.AcquirePolicy) pool {
				p := bl.new(policy)
				t.Cleanup(func() {
					if err := p.check(); err != nil {
						t.Errorf("at end of test: %v", err)
					}
				})
				return p
			}
			test(t, newPool)
		})
	}
}

func (p *TightPool[T, K]) check() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, it := range p.heap {
		if it.index != i {
			return fmt.Errorf("heap[%d] has index %d", i, it.index)
		}
		if i > 0 && p.cmp(it.v, p.heap[(i-1)/2].v) < 0 {
			return fmt.Errorf("heap[%d] is better than its parent", i)
		}
	}
	return checkMap(p.items, p.key, p.heap, func(it *tightItem[T]) (T, int) { return it.v, it.index })
}

func (p *HeapPool[T, K]) check() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, it := range p.heap.s {
		if it.index != i {
			return fmt.Errorf("heap[%d] has index %d", i, it.index)
		}
		if i > 0 && p.heap.Less(i, (i-1)/2) {
			return fmt.Errorf("heap[%d] is better than its parent", i)
		}
	}
	return checkMap(p.items, p.key, p.heap.s, func(it *heapItem[T]) (T, int) { return it.v, it.index })
}

// checkMap checks that every item in the heap is in the map under its
// key, and that every other item in the map is held.
func checkMap[T any, K comparable, I comparable](items map[K]I, key func(T) K, inHeap []I, get func(I) (T, int)) error {
	for _, it := range inHeap {
		v, _ := get(it)
		if items[key(v)] != it {
			return fmt.Errorf("heap item %v is not in the key map under its key", key(v))
		}
	}
	heldCount := 0
	for k, it := range items {
		v, index := get(it)
		if key(v) != k {
			return fmt.Errorf("key map: %v maps to an item keyed %v", k, key(v))
		}
		if index == held {
			heldCount++
		}
	}
	if len(items) != len(inHeap)+heldCount {
		return fmt.Errorf("%d keys, %d in the heap and %d held", len(items), len(inHeap), heldCount)
	}
	return nil
}

func mustAcquire(t *testing.T, p pool) *worker {
	t.Helper()
	v, err := p.Acquire()
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return v
}

func wantErr(t *testing.T, op string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: got %v, want %v", op, got, want)
	}
}

func TestPopsComeOutInPriorityOrder(t *testing.T) {
	forEachBaseline(t, func(t *testing.T, newPool func(config.AcquirePolicy) pool) {
		p := newPool(config.Exclusive)
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 500
		ws := make([]*worker, n)
		for i := range ws {
			ws[i] = &worker{ID: fmt.Sprint(i), Priority: rng.IntN(100)} // with ties
		}
		// Each path into the heap: Add, a batch larger than the heap
		// (heapified), a smaller one (pushed one by one).
		for _, v := range ws[:100] {
			if err := p.Add(v); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.BatchAdd(ws[100:400]); err != nil {
			t.Fatal(err)
		}
		if err := p.BatchAdd(ws[400:]); err != nil {
			t.Fatal(err)
		}
		var got []int
		for range n {
			got = append(got, mustAcquire(t, p).Priority)
		}
		if !slices.IsSorted(got) {
			t.Fatalf("priorities out of order: %v", got)
		}
		_, err := p.Acquire()
		wantErr(t, "Acquire from an all-held pool", err, crserrors.ErrNoResourceAvailable)
		if p.Len() != n {
			t.Fatalf("Len = %d, want %d (held resources stay)", p.Len(), n)
		}
	})
}

func TestReleasePutsBack(t *testing.T) {
	forEachBaseline(t, func(t *testing.T, newPool func(config.AcquirePolicy) pool) {
		p := newPool(config.Exclusive)
		if err := p.BatchAdd(numbered(3)); err != nil {
			t.Fatal(err)
		}
		first := mustAcquire(t, p)
		if second := mustAcquire(t, p); first.ID != "w0" || second.ID != "w1" {
			t.Fatalf("acquired %s then %s, want w0 then w1", first.ID, second.ID)
		}
		if err := p.Release(first.ID); err != nil {
			t.Fatal(err)
		}
		if again := mustAcquire(t, p); again.ID != "w0" {
			t.Fatalf("after Release(w0), acquired %s, want w0", again.ID)
		}
		if err := p.Release("w0"); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "Release of an active resource", p.Release("w0"), crserrors.ErrResourceNotInactive)
		wantErr(t, "Release of an unknown key", p.Release("nope"), crserrors.ErrResourceNotFound)
	})
}

func TestSharedAcquireLeavesTheBest(t *testing.T) {
	forEachBaseline(t, func(t *testing.T, newPool func(config.AcquirePolicy) pool) {
		p := newPool(config.Shared)
		_, err := p.Acquire()
		wantErr(t, "Acquire from an empty pool", err, crserrors.ErrNoResourceAvailable)
		if err := p.BatchAdd(numbered(3)); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if v := mustAcquire(t, p); v.ID != "w0" {
				t.Fatalf("shared Acquire returned %s, want w0 each time", v.ID)
			}
		}
		wantErr(t, "Release under Shared", p.Release("w0"), crserrors.ErrNotExclusive)
	})
}

func TestUpdateRestoresOrder(t *testing.T) {
	forEachBaseline(t, func(t *testing.T, newPool func(config.AcquirePolicy) pool) {
		p := newPool(config.Exclusive)
		if err := p.BatchAdd(numbered(4)); err != nil {
			t.Fatal(err)
		}
		if err := p.Update(&worker{ID: "w0", Priority: 10}); err != nil { // best to worst
			t.Fatal(err)
		}
		if err := p.Update(&worker{ID: "w3", Priority: -1}); err != nil { // worst to best
			t.Fatal(err)
		}
		held := mustAcquire(t, p)
		if held.ID != "w3" || held.Priority != -1 {
			t.Fatalf("acquired %+v, want w3 with its new priority -1", held)
		}
		// Updating a held resource changes where Release puts it.
		if err := p.Update(&worker{ID: "w3", Priority: 20}); err != nil {
			t.Fatal(err)
		}
		if err := p.Release("w3"); err != nil {
			t.Fatal(err)
		}
		var order []string
		for range 4 {
			order = append(order, mustAcquire(t, p).ID)
		}
		if want := []string{"w1", "w2", "w0", "w3"}; !slices.Equal(order, want) {
			t.Fatalf("order %v, want %v", order, want)
		}
		wantErr(t, "Update of an unknown key", p.Update(&worker{ID: "nope"}), crserrors.ErrResourceNotFound)
	})
}

func TestAddRefusesDuplicatesAndBatchAddIsAllOrNothing(t *testing.T) {
	forEachBaseline(t, func(t *testing.T, newPool func(config.AcquirePolicy) pool) {
		p := newPool(config.Exclusive)
		if err := p.BatchAdd(numbered(2)); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "Add of an existing key", p.Add(&worker{ID: "w1"}), crserrors.ErrDuplicateKey)
		withExisting := []*worker{{ID: "x", Priority: -5}, {ID: "w0"}}
		wantErr(t, "BatchAdd with an existing key", p.BatchAdd(withExisting), crserrors.ErrDuplicateKey)
		repeated := []*worker{{ID: "y", Priority: -5}, {ID: "z"}, {ID: "y"}}
		wantErr(t, "BatchAdd with a repeated key", p.BatchAdd(repeated), crserrors.ErrDuplicateKey)
		if p.Len() != 2 {
			t.Fatalf("Len = %d after refused batches, want 2", p.Len())
		}
		// Nothing of the refused batches stayed: not in the heap (x and y
		// would be first, at -5), and not in the key map.
		if v := mustAcquire(t, p); v.ID != "w0" {
			t.Fatalf("acquired %s, want w0", v.ID)
		}
		if err := p.BatchAdd([]*worker{{ID: "x"}, {ID: "y"}, {ID: "z"}}); err != nil {
			t.Fatalf("BatchAdd of the refused keys: %v", err)
		}
	})
}

// TestAgainstModel runs random operations on each baseline and on a model
// (a map of priorities and a set of held keys) and checks that every
// Acquire returns a best available resource, and that the pool's
// structure holds after each operation.
func TestAgainstModel(t *testing.T) {
	forEachBaseline(t, func(t *testing.T, newPool func(config.AcquirePolicy) pool) {
		p := newPool(config.Exclusive)
		rng := rand.New(rand.NewPCG(3, 4))
		prio := map[string]int{}
		isHeld := map[string]bool{}
		next := 0
		newWorker := func() *worker {
			next++
			return &worker{ID: fmt.Sprint("m", next), Priority: rng.IntN(50)}
		}
		keys := func() []string { // sorted, for a repeatable choice
			ks := make([]string, 0, len(prio))
			for k := range prio {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			return ks
		}
		for step := range 2000 {
			switch op := rng.IntN(5); {
			case op <= 1 && len(prio) >= 200:
				// Full enough: keep the model's checks cheap.
			case op == 0:
				v := newWorker()
				if err := p.Add(v); err != nil {
					t.Fatal(err)
				}
				prio[v.ID] = v.Priority
			case op == 1:
				// Sometimes larger than the heap (heapified), sometimes
				// smaller (pushed one by one).
				batch := make([]*worker, rng.IntN(len(prio)+2))
				for i := range batch {
					batch[i] = newWorker()
					prio[batch[i].ID] = batch[i].Priority
				}
				if err := p.BatchAdd(batch); err != nil {
					t.Fatal(err)
				}
			case op == 2 && len(prio) > 0:
				ks := keys()
				v := &worker{ID: ks[rng.IntN(len(ks))], Priority: rng.IntN(50)}
				if err := p.Update(v); err != nil {
					t.Fatal(err)
				}
				prio[v.ID] = v.Priority
			case op == 3:
				best := -1
				for k, pr := range prio {
					if !isHeld[k] && (best < 0 || pr < best) {
						best = pr
					}
				}
				v, err := p.Acquire()
				if best < 0 {
					wantErr(t, "Acquire with nothing available", err, crserrors.ErrNoResourceAvailable)
					break
				}
				if err != nil || v.Priority != best || isHeld[v.ID] {
					t.Fatalf("step %d: Acquire = %+v, %v; want an available resource of priority %d", step, v, err, best)
				}
				isHeld[v.ID] = true
			case op == 4 && len(isHeld) > 0:
				var hs []string
				for k := range isHeld {
					hs = append(hs, k)
				}
				slices.Sort(hs)
				k := hs[rng.IntN(len(hs))]
				if err := p.Release(k); err != nil {
					t.Fatal(err)
				}
				delete(isHeld, k)
			}
			if err := p.check(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if p.Len() != len(prio) {
			t.Fatalf("Len = %d, want %d", p.Len(), len(prio))
		}
	})
}

// TestConcurrentUse gives the race detector the benchmarks' access
// pattern: several goroutines acquiring, updating and releasing at once.
func TestConcurrentUse(t *testing.T) {
	forEachBaseline(t, func(t *testing.T, newPool func(config.AcquirePolicy) pool) {
		p := newPool(config.Exclusive)
		if err := p.BatchAdd(numbered(64)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 500 {
					v, err := p.Acquire()
					if err != nil {
						t.Error(err)
						return
					}
					if err := p.Update(&worker{ID: v.ID, Priority: (g + i) % 64}); err != nil {
						t.Error(err)
						return
					}
					if err := p.Release(v.ID); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if p.Len() != 64 {
			t.Fatalf("Len = %d, want 64", p.Len())
		}
	})
}
