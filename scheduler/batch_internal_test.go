package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// A BatchAdd that fails names the first key of the batch that was taken
// at one instant, and says that key's resource drains only if it drained
// at that instant (as if every key were checked in order, up front).
// Here the batch is [k0, k2] with k0 absent and k2 held; while the batch
// fails, another caller adds k0, then removes k2 (it drains), and more.
// k2 drains only while k0 is in the pool, so the error must be
// ErrDuplicateKey alone. Finding 11 (docs/TESTING.md): the flag was read
// after the keys were looked up, and the other caller's changes came in
// between.
func TestBatchDuplicateDrainsOnlyIfItDrainedWhenTheKeyWasFound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    refusal
		steps []func(s *Scheduler[*prio, string]) error
	}{
		{
			// The second look at the map finds k2 the first key taken.
			name: "k0 back and k2 drained after the keys were looked up",
			at:   lookedUp,
			steps: []func(s *Scheduler[*prio, string]) error{
				func(s *Scheduler[*prio, string]) error { return s.Add(&prio{"k0", 0}) },
				func(s *Scheduler[*prio, string]) error { return s.Remove("k2") },
			},
		},
		{
			// The second look finds no key taken, so the error names the
			// key the insert met, as the insert saw it.
			name: "k2 drained and gone, with k0 in the pool meanwhile, before the second look",
			at:   insertFailed,
			steps: []func(s *Scheduler[*prio, string]) error{
				func(s *Scheduler[*prio, string]) error { return s.Add(&prio{"k0", 0}) },
				func(s *Scheduler[*prio, string]) error { return s.Remove("k2") },
				func(s *Scheduler[*prio, string]) error { return s.Release("k2") }, // k2 leaves
				func(s *Scheduler[*prio, string]) error { return s.Remove("k0") },
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newGlobal(t, 1, nil)
			if err := s.Add(&prio{"k2", 2}); err != nil {
				t.Fatal(err)
			}
			if got, err := s.AcquireContext(context.Background()); err != nil || got.key != "k2" {
				t.Fatalf("AcquireContext = %v, %v; want k2", got, err)
			}
			s.setHooks(hooks{refusing: func(at refusal) {
				if at != tc.at {
					return
				}
				s.setHooks(hooks{})
				for _, step := range tc.steps {
					if err := step(s); err != nil {
						t.Error(err)
					}
				}
			}})
			err := s.BatchAdd([]*prio{{"k0", 1}, {"k2", 2}})
			if !errors.Is(err, crserrors.ErrDuplicateKey) || errors.Is(err, crserrors.ErrResourceDraining) {
				t.Fatalf("BatchAdd = %v; want ErrDuplicateKey alone", err)
			}
		})
	}
}

// A comparator that panics while a BatchAdd mends one of its shards
// leaves every shard's change closed: the shards mended before it were
// opened and are closed again, the one that panicked and those after it
// were never opened. A shard left open would send every lock-free
// reader to its lock from then on.
func TestBatchAddPanickingInMendLeavesNoShardOpen(t *testing.T) {
	var armed atomic.Bool
	s, err := New(config.Config[*prio, string]{
		HeapCount:     4,
		AcquirePolicy: config.Shared,
		Comparator: func(a, b *prio) int {
			if armed.Load() {
				panic("comparator")
			}
			return cmp.Compare(a.p, b.p)
		},
		KeyFunc: func(v *prio) string { return v.key },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	for i := range 8 { // two a shard
		if err := s.Add(&prio{fmt.Sprint("r", i), i}); err != nil {
			t.Fatal(err)
		}
	}
	sh := &s.shards[2]
	sh.Lock()
	sh.Risk() // as a panic in an earlier operation leaves it
	sh.Unlock()
	armed.Store(true)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("BatchAdd did not pass on the comparator's panic")
			}
		}()
		_ = s.BatchAdd([]*prio{{"b0", 0}, {"b1", 1}, {"b2", 2}, {"b3", 3}})
	}()
	armed.Store(false)
	for i := range s.shards {
		if v := s.shards[i].Version.Load(); v&1 != 0 {
			t.Errorf("shard %d left open (version %d)", i, v)
		}
	}
	if err := s.BatchAdd([]*prio{{"b0", 0}, {"b1", 1}, {"b2", 2}, {"b3", 3}}); err != nil || s.Len() != 12 {
		t.Fatalf("BatchAdd after the panic = %v, Len %d; want nil, 12", err, s.Len())
	}
}
