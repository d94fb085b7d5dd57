package lookup

import (
	"fmt"
	"testing"
)

type point struct{ x, y int } // a key type that does not hash: one shard

type name string // a named string: hashed like a string

func exercise[K comparable](t *testing.T, keys []K) {
	t.Helper()
	m := New[K, int]()
	for i, k := range keys {
		if _, ok := m.Insert(k, i); !ok {
			t.Fatalf("Insert(%v): a fresh key must go in", k)
		}
		if present, ok := m.Insert(k, -1); ok || present != i {
			t.Fatalf("second Insert(%v) = %d, %v; want the value present (%d), false", k, present, ok, i)
		}
	}
	if m.Len() != len(keys) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(keys))
	}
	for i, k := range keys {
		if v, ok := m.Get(k); !ok || v != i {
			t.Fatalf("Get(%v) = %d, %v", k, v, ok)
		}
	}
	m.Delete(keys[0])
	if _, ok := m.Get(keys[0]); ok {
		t.Fatal("deleted key still there")
	}
	if dup, present := m.InsertAll(keys[:3], []int{7, 8, 9}); dup != 1 || present != 1 {
		t.Fatalf("InsertAll with present keys at 1 and 2 returned %d, %d; want 1 and the value present (1)", dup, present)
	}
	if dup, _ := m.InsertAll(keys[len(keys):], nil); dup != -1 {
		t.Fatalf("InsertAll of nothing returned %d, want -1", dup)
	}
	if _, ok := m.Get(keys[0]); ok {
		t.Fatal("a failed InsertAll inserted its fresh key")
	}
	seen := 0
	m.Range(func(K, int) { seen++ })
	if seen != len(keys)-1 {
		t.Fatalf("Range saw %d, want %d", seen, len(keys)-1)
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
	m := New[string, int]()
	for i := 0; i < 3200; i++ {
		m.Insert(fmt.Sprint("user-", i), i)
	}
	for i := range m.shards {
		if n := len(m.shards[i].m); n < 50 || n > 150 {
			t.Fatalf("shard %d holds %d of 3200 keys", i, n)
		}
	}
	if p := New[point, int](); len(p.shards) != 1 {
		t.Fatalf("unhashable key type got %d shards", len(p.shards))
	}
}
