package lookup

import (
	"fmt"
	"sync"
	"testing"

	"github.com/crsched/crs/internal/node"
)

type point struct{ x, y int } // a key type that does not hash: one locked map

type name string // a named string: hashed like a string

func newMap[K comparable]() *Map[int, K] {
	return New[int, K]()
}

// newItem is what the tests store: a node whose Value is a payload.
func newItem[K comparable](k K, v int) *node.Node[int, K] {
	return &node.Node[int, K]{Key: k, Value: v}
}

func exercise[K comparable](t *testing.T, keys []K) {
	t.Helper()
	m := newMap[K]()
	m.Delete(keys[0]) // no table yet: nothing to do
	if _, ok := m.Get(keys[0]); ok {
		t.Fatal("an empty map has an entry")
	}
	for i, k := range keys {
		if _, ok := m.Insert(k, newItem(k, i)); !ok {
			t.Fatalf("Insert(%v): a fresh key must go in", k)
		}
		if present, ok := m.Insert(k, newItem(k, -1)); ok || present.Value != i {
			t.Fatalf("second Insert(%v) = %v, %v; want the entry present (%d), false", k, present, ok, i)
		}
	}
	if m.Len() != len(keys) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(keys))
	}
	for i, k := range keys {
		if e, ok := m.Get(k); !ok || e.Value != i {
			t.Fatalf("Get(%v) = %v, %v", k, e, ok)
		}
	}
	m.Delete(keys[0])
	if _, ok := m.Get(keys[0]); ok {
		t.Fatal("deleted key still there")
	}
	m.Delete(keys[0]) // absent: nothing happens
	batch := []node.Node[int, K]{{Key: keys[0], Value: 7}, {Key: keys[1], Value: 8}, {Key: keys[2], Value: 9}}
	leaving, _ := m.Get(keys[1])
	leaving.Leaving.Store(true)
	if dup, present, drains := m.InsertAll(batch); dup != 1 || present.Value != 1 || !drains {
		t.Fatalf("InsertAll with present keys at 1 and 2 returned %d, %v, %v; want 1, the entry present (1) and that it is leaving", dup, present, drains)
	}
	if _, ok := m.Get(keys[0]); ok {
		t.Fatal("a failed InsertAll inserted its fresh key")
	}
	if dup, _, _ := m.InsertAll(nil); dup != -1 {
		t.Fatalf("InsertAll of nothing returned %d, want -1", dup)
	}
	repeated := []node.Node[int, K]{{Key: keys[0], Value: 7}, {Key: keys[0], Value: 8}}
	if dup, present, drains := m.InsertAll(repeated); dup != 1 || present != &repeated[0] || drains {
		t.Fatalf("InsertAll of a repeated key returned %d, %v, %v; want 1, the first entry, not leaving", dup, present, drains)
	}
	if _, ok := m.Get(keys[0]); ok {
		t.Fatal("a failed InsertAll left a key of its batch in")
	}
	if dup, _, _ := m.InsertAll(batch[:1]); dup != -1 {
		t.Fatalf("InsertAll of a fresh key returned %d", dup)
	}
	if e, ok := m.Get(keys[0]); !ok || e != &batch[0] {
		t.Fatal("InsertAll did not store the entry itself")
	}
	seen := 0
	m.Range(func(k K, e *node.Node[int, K]) {
		if e.Key != k {
			t.Fatalf("Range gave key %v with the entry of %v", k, e.Key)
		}
		seen++
	})
	if seen != len(keys) {
		t.Fatalf("Range saw %d, want %d", seen, len(keys))
	}
	m.Delete(keys[0])
	if i, e, drains := m.FirstPresent([]K{keys[0], keys[2], keys[1]}); i != 1 || e == nil || e.Key != keys[2] || drains {
		t.Fatalf("FirstPresent(absent, %v, %v) = %d, %v, %v; want 1, the entry of %v, not leaving", keys[2], keys[1], i, e, drains, keys[2])
	}
	if i, e, drains := m.FirstPresent([]K{keys[0], keys[1]}); i != 1 || e != leaving || !drains {
		t.Fatalf("FirstPresent(absent, %v) = %d, %v, %v; want 1, its entry, leaving", keys[1], i, e, drains)
	}
	if i, e, drains := m.FirstPresent([]K{keys[0]}); i != -1 || e != nil || drains {
		t.Fatalf("FirstPresent(absent) = %d, %v, %v; want -1, nil, false", i, e, drains)
	}
	for _, k := range keys {
		m.Delete(k)
	}
	if m.Len() != 0 {
		t.Fatalf("Len = %d after deleting every key", m.Len())
	}
}

func TestMapWorksForEveryKeyKind(t *testing.T) {
	var strs []string
	var names []name
	var ints []int
	var u32s []uint32
	var points []point
	for i := 0; i < 200; i++ {
		strs = append(strs, fmt.Sprint("k", i))
		names = append(names, name(fmt.Sprint("n", i)))
		ints = append(ints, i*1_000_003)
		u32s = append(u32s, uint32(i))
		points = append(points, point{i, -i})
	}
	exercise(t, strs)
	exercise(t, names)
	exercise(t, ints)
	exercise(t, u32s)
	exercise(t, points)
}

func TestHashableKeysSpreadOverShards(t *testing.T) {
	m := newMap[string]()
	for i := 0; i < 3200; i++ {
		k := fmt.Sprint("user-", i)
		m.Insert(k, newItem(k, i))
	}
	for i := range m.shards {
		if n := m.shards[i].live; n < 50 || n > 150 {
			t.Fatalf("shard %d holds %d of 3200 keys", i, n)
		}
	}
	if p := newMap[point](); p.shards != nil || p.other == nil {
		t.Fatal("a key type that does not hash must go to the locked map")
	}
}

// Deleting leaves tombstones that probes must step over, and that a
// rebuild clears: churn through one shard's table many times its size
// and every key present must still be found, every key deleted not.
func TestChurnKeepsEveryProbeRight(t *testing.T) {
	m := newMap[int]()
	const window = 100
	for i := 0; i < 20_000; i++ {
		m.Insert(i, newItem(i, i))
		if i >= window {
			m.Delete(i - window)
		}
		if i%997 == 0 {
			for j := max(0, i-2*window); j <= i; j++ {
				_, ok := m.Get(j)
				if want := j > i-window; ok != want {
					t.Fatalf("after inserting %d: Get(%d) found %v, want %v", i, j, ok, want)
				}
			}
		}
	}
	for i := range m.shards {
		s := &m.shards[i]
		if t0 := s.table.Load(); t0 != nil && 4*s.used > 3*len(t0.slots) {
			t.Fatalf("shard %d uses %d of %d slots: probes may not end", i, s.used, len(t0.slots))
		}
	}
	if m.Len() != window {
		t.Fatalf("Len = %d, want %d", m.Len(), window)
	}
}

// Readers take no lock, so they run while writers insert, delete and
// rebuild tables: a key that stays in must be found by every read.
func TestReadersFindStableKeysWhileWritersChurn(t *testing.T) {
	m := newMap[string]()
	stable := make([]string, 64)
	for i := range stable {
		stable[i] = fmt.Sprint("stable-", i)
		m.Insert(stable[i], newItem(stable[i], i))
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 0; i < 20_000; i++ {
			k := fmt.Sprint("churn-", i)
			m.Insert(k, newItem(k, i))
			if i >= 50 {
				m.Delete(fmt.Sprint("churn-", i-50))
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for i, k := range stable {
					if e, ok := m.Get(k); !ok || e.Value != i {
						t.Errorf("Get(%s) = %v, %v while other keys churned", k, e, ok)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// A rebuilt table is the smallest power of two, from 8, with the slots
// asked for: Insert asks for four an entry, so that probes stay short
// until the next rebuild.
func TestRebuildMakesTheSmallestPowerOfTwoThatFits(t *testing.T) {
	m := newMap[int]()
	s := &m.shards[0]
	for slots := 0; slots <= 300; slots++ {
		size := len(m.rebuild(s, nil, slots).slots)
		if size&(size-1) != 0 || size < 8 || size < slots || (size > 8 && size/2 >= slots) {
			t.Fatalf("rebuild for %d slots: %d", slots, size)
		}
	}
}

// InsertAll makes room for its batch once, keeping every table at most
// half full, and no more: it does not leave the slack for growth that a
// single Insert's rebuild leaves (about 8 slots an entry).
func TestInsertAllSizesTablesForTheBatch(t *testing.T) {
	m := newMap[int]()
	batch := make([]node.Node[int, int], 1000)
	for i := range batch {
		batch[i] = node.Node[int, int]{Key: i, Value: i}
	}
	if dup, _, _ := m.InsertAll(batch); dup != -1 {
		t.Fatalf("InsertAll of fresh keys returned %d", dup)
	}
	slots := 0
	for i := range m.shards {
		s := &m.shards[i]
		n := len(s.table.Load().slots)
		if 2*s.used > n {
			t.Fatalf("shard %d: %d entries in %d slots, more than half full", i, s.used, n)
		}
		slots += n
	}
	if slots > 6*len(batch) {
		t.Fatalf("%d slots for a batch of %d", slots, len(batch))
	}
}

// sameHash makes every key of m hash alike, so that all of them share
// one shard and one probe sequence.
func sameHash[K comparable](m *Map[int, K]) {
	m.hash = func(K) uint64 { return 42 }
}

// A slot's hash only filters: keys whose hashes are equal are told apart
// by the keys themselves, in every operation.
func TestKeysWithEqualHashesAreToldApartByTheirKeys(t *testing.T) {
	m := newMap[string]()
	sameHash(m)
	keys := []string{"a", "b", "c", "d", "e"}
	for i, k := range keys {
		if _, ok := m.Insert(k, newItem(k, i)); !ok {
			t.Fatalf("Insert(%s) refused a fresh key whose hash another key has", k)
		}
	}
	m.Delete("b")
	for i, k := range keys {
		e, ok := m.Get(k)
		if want := k != "b"; ok != want || ok && e.Value != i {
			t.Fatalf("Get(%s) = %v, %v; want found %v with value %d", k, e, ok, want, i)
		}
	}
	batch := []node.Node[int, string]{{Key: "f", Value: 5}, {Key: "c", Value: -1}}
	if dup, present, _ := m.InsertAll(batch); dup != 1 || present == nil || present.Value != 2 {
		t.Fatalf("InsertAll(f, c) = %d, %v; want 1 and the entry of c", dup, present)
	}
	if i, e, _ := m.FirstPresent([]string{"b", "f", "d"}); i != 2 || e.Value != 3 {
		t.Fatalf("FirstPresent(b, f, d) = %d, %v; want 2 and the entry of d", i, e)
	}
}

// An insert walks the probe sequence once: it reuses the first tombstone
// on it, but only after looking past it for the key, which may sit
// further along.
func TestInsertReusesATombstoneOnlyForAnAbsentKey(t *testing.T) {
	m := newMap[string]()
	sameHash(m)
	for i, k := range []string{"a", "b", "c"} {
		m.Insert(k, newItem(k, i))
	}
	m.Delete("a") // a tombstone first on the probe sequence
	if present, ok := m.Insert("c", newItem("c", -1)); ok || present.Value != 2 {
		t.Fatalf("Insert(c) over a tombstone before c = %v, %v; want c's entry, refused", present, ok)
	}
	s := m.shardOf(42)
	used := s.used
	if _, ok := m.Insert("d", newItem("d", 3)); !ok {
		t.Fatal("Insert(d) refused a fresh key")
	}
	if s.used != used {
		t.Fatalf("Insert(d) took a fresh slot (%d used, was %d) with a tombstone on its way", s.used, used)
	}
	if e, ok := m.Get("d"); !ok || e.Value != 3 {
		t.Fatalf("Get(d) = %v, %v after it took a tombstone's slot", e, ok)
	}
}

// A probe passes a slot whose hash differs from its key's without
// reading the slot's entry: that is what the hash is there for (an entry
// is a node elsewhere in memory). Seen here by an entry found under its
// own hash and missed under another one that starts the same probe.
func TestProbePassesSlotsWhoseHashDiffers(t *testing.T) {
	m := newMap[string]()
	sameHash(m)
	m.Insert("a", newItem("a", 0))
	if _, ok := m.Get("a"); !ok {
		t.Fatal("Get(a) missed the entry stored under its hash")
	}
	m.hash = func(string) uint64 { return 42 | 1<<40 } // same shard, same first slot
	if e, ok := m.Get("a"); ok {
		t.Fatalf("Get(a) under another hash read the entry (%v) of a slot whose hash differs", e)
	}
}

func TestAPanickingKeyLeavesNoLockHeld(t *testing.T) {
	m := newMap[any]()
	for name, op := range map[string]func(){
		"Get":    func() { m.Get([]int{1}) },
		"Delete": func() { m.Delete([]int{1}) },
		"Insert": func() { m.Insert([]int{1}, newItem[any](nil, 0)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s of an unhashable key did not panic", name)
				}
			}()
			op()
		}()
	}
	// Would block for good on a lock left held.
	if _, ok := m.Insert("a", newItem[any]("a", 1)); !ok {
		t.Fatal("Insert after the panics failed")
	}
	if _, ok := m.Get("a"); !ok {
		t.Fatal("Get after the panics failed")
	}
}
