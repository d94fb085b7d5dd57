package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

func homes(t *testing.T, s *scheduler.Scheduler[*worker, string], ids []acquire.AffinityIdentifier) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		v, err := s.AcquireByAffinity(id)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v.ID
	}
	return out
}

// Removing one of n resources moves its own identifiers and at most
// three times as many others (about as many are expected).
func TestAffinityRemovingAResourceMovesFewOthers(t *testing.T) {
	const resources, identifiers = 200, 40_000
	s := newScheduler(t, baseConfig(8, config.Shared))
	addAll(t, s, numbered(resources)...)
	ids := make([]acquire.AffinityIdentifier, identifiers)
	for i := range ids {
		ids[i] = acquire.StringIdentifier(fmt.Sprintf("user-%d", i))
	}
	before := homes(t, s, ids)
	if err := s.Remove("w17"); err != nil {
		t.Fatal(err)
	}
	after := homes(t, s, ids)
	own, others := 0, 0
	for i := range ids {
		switch {
		case before[i] == "w17":
			own++
		case after[i] != before[i]:
			others++
		}
	}
	if own == 0 || others > 3*identifiers/resources {
		t.Fatalf("removing w17 moved its %d identifiers and %d others, want at most %d others", own, others, 3*identifiers/resources)
	}
}

// Every resource serves between 0.75 and 1.25 times its fair share of
// 100,000 identifiers.
func TestAffinitySharesAreEven(t *testing.T) {
	const resources, identifiers = 100, 100_000
	s := newScheduler(t, baseConfig(8, config.Shared))
	addAll(t, s, numbered(resources)...)
	load := map[string]int{}
	for i := 0; i < identifiers; i++ {
		v, err := s.AcquireByAffinity(acquire.StringIdentifier(fmt.Sprintf("user-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		load[v.ID]++
	}
	fair := float64(identifiers) / resources
	for i := 0; i < resources; i++ {
		if r := float64(load[fmt.Sprint("w", i)]) / fair; r < 0.75 || r > 1.25 {
			t.Errorf("w%d serves %.2fx its fair share", i, r)
		}
	}
}

// Concurrent Adds, Removes and affinity acquisitions leave the ring
// holding exactly the resources present: identifiers then map as in a
// scheduler given the same resources in one batch.
func TestAffinityAfterConcurrentChangesMatchesAFreshScheduler(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Shared))
	addAll(t, s, numbered(64)...)
	ids := make([]acquire.AffinityIdentifier, 500)
	for i := range ids {
		ids[i] = acquire.StringIdentifier(fmt.Sprintf("user-%d", i))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k := fmt.Sprint("w", (g*7+i)%80)
				if i%2 == 0 {
					_ = s.Remove(k)
				} else {
					_ = s.Add(w(k, i))
				}
				if _, err := s.AcquireByAffinity(ids[(g+i)%len(ids)]); err != nil && s.Len() > 0 {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	var present []*worker
	for i := 0; i < 80; i++ {
		if v, err := s.Get(fmt.Sprint("w", i)); err == nil {
			present = append(present, v)
		}
	}
	if len(present) == 0 {
		t.Skip("every resource ended removed")
	}
	fresh := newScheduler(t, baseConfig(4, config.Shared))
	if err := fresh.BatchAdd(present); err != nil {
		t.Fatal(err)
	}
	got, want := homes(t, s, ids), homes(t, fresh, ids)
	for i := range ids {
		if got[i] != want[i] {
			t.Fatalf("%v maps to %s, in a fresh scheduler to %s", ids[i], got[i], want[i])
		}
	}
}

// sequences returns, for each identifier, the first resources it gets
// when it acquires again and again without releasing (exclusive): its
// resource, then its fallback order. It releases them after.
func sequences(t *testing.T, s *scheduler.Scheduler[*worker, string], ids []acquire.AffinityIdentifier, depth int) [][]string {
	t.Helper()
	out := make([][]string, len(ids))
	for i, id := range ids {
		for range depth {
			v, err := s.AcquireByAffinity(id)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = append(out[i], v.ID)
		}
		for _, k := range out[i] {
			if err := s.Release(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// Schedulers holding the same keys map identifiers alike, with the same
// fallback order, whatever the order the keys came in: in one batch, one
// by one in another order after the first affinity call, or with other
// keys added and removed between.
func TestAffinityDependsOnTheKeysOnly(t *testing.T) {
	const resources = 3000
	ws := numbered(resources)
	ids := make([]acquire.AffinityIdentifier, 200)
	for i := range ids {
		ids[i] = acquire.StringIdentifier(fmt.Sprintf("user-%d", i))
	}
	batch := newScheduler(t, baseConfig(8, config.Exclusive))
	if err := batch.BatchAdd(ws); err != nil {
		t.Fatal(err)
	}
	oneByOne := newScheduler(t, baseConfig(3, config.Exclusive))
	addAll(t, oneByOne, w("first", 0))
	if _, err := oneByOne.AcquireByAffinity(ids[0]); err != nil { // builds the ring before the others come
		t.Fatal(err)
	}
	if err := oneByOne.Release("first"); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(26, 4))
	for _, i := range r.Perm(resources) {
		addAll(t, oneByOne, ws[i])
	}
	if err := oneByOne.Remove("first"); err != nil {
		t.Fatal(err)
	}
	churned := newScheduler(t, baseConfig(8, config.Exclusive))
	extra := numbered(resources + 500)[resources:]
	if err := churned.BatchAdd(append(slices.Clone(extra), ws[:resources/2]...)); err != nil {
		t.Fatal(err)
	}
	for _, k := range homes(t, churned, ids[:10]) { // builds the ring
		if err := churned.Release(k); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range extra {
		if err := churned.Remove(v.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := churned.BatchAdd(ws[resources/2:]); err != nil {
		t.Fatal(err)
	}
	want := sequences(t, batch, ids, 4)
	for name, s := range map[string]*scheduler.Scheduler[*worker, string]{"one by one": oneByOne, "churned": churned} {
		if got := sequences(t, s, ids, 4); !slices.EqualFunc(got, want, slices.Equal[[]string]) {
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("%s: %v gets %v, in one batch %v", name, ids[i], got[i], want[i])
				}
			}
		}
	}
}

// At scale too, a change of priority moves no identifier: 10,000
// resources, 10% of them updated to new priorities.
func TestAffinityKeepsIdentifiersWhenPrioritiesChangeAtScale(t *testing.T) {
	const resources = 10_000
	s := newScheduler(t, baseConfig(8, config.Shared))
	if err := s.BatchAdd(numbered(resources)); err != nil {
		t.Fatal(err)
	}
	ids := make([]acquire.AffinityIdentifier, 5000)
	for i := range ids {
		ids[i] = acquire.StringIdentifier(fmt.Sprintf("user-%d", i))
	}
	before := homes(t, s, ids)
	for i := 0; i < resources; i += 10 {
		if err := s.Update(w(fmt.Sprint("w", i), -i)); err != nil {
			t.Fatal(err)
		}
	}
	after := homes(t, s, ids)
	kept := 0
	for i := range ids {
		if after[i] == before[i] {
			kept++
		}
	}
	if kept < len(ids)*9/10 {
		t.Fatalf("%d of %d identifiers kept their resource, want at least 90%%", kept, len(ids))
	}
}
