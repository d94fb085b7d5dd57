package lookup

import (
	"fmt"
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
