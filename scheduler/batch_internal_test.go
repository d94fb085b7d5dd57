package scheduler

import (
	"context"
	"errors"
	"testing"

	crserrors "github.com/crsched/crs/errors"
)

// A BatchAdd that fails names the first key of the batch that was taken
// at one instant, and says that key's resource drains only if it drained
// at that instant (as if every key were checked in order, up front). In
// both tests the batch is [k0, k2] with k0 absent and k2 held; while the
// batch fails, another caller adds k0, removes k2 (it drains) and more.
// k2 drains only while k0 is in the pool, so the error must be
// ErrDuplicateKey alone. Finding 11 (docs/TESTING.md): the flag was read
// after the keys were looked up, and the other caller's changes came
// between.

// The second look at the map finds k2 the first key taken, and the
// other caller adds k0 and removes k2 before the error is built.
func TestBatchDuplicateDrainsOnlyIfItDrainedWhenTheKeysWereLookedUp(t *testing.T) {
	s, k2 := heldK2(t)
	s.refusing = func(at refusal) {
		if at != lookedUp {
			return
		}
		s.refusing = nil
		if err := s.Add(&prio{"k0", 0}); err != nil {
			t.Error(err)
		}
		if err := s.Remove(k2.key); err != nil {
			t.Error(err)
		}
	}
	err := s.BatchAdd([]*prio{{"k0", 1}, {"k2", 2}})
	if !errors.Is(err, crserrors.ErrDuplicateKey) || errors.Is(err, crserrors.ErrResourceDraining) {
		t.Fatalf("BatchAdd = %v; want ErrDuplicateKey alone (k2 drained only once k0 was back)", err)
	}
}

// The second look finds no key taken (k2 came and went, k0 too), so the
// error names the key the insert met; whether it drains is what the
// insert saw.
func TestBatchDuplicateOfAKeyGoneSinceDrainsOnlyIfItDrainedWhenMet(t *testing.T) {
	s, k2 := heldK2(t)
	s.refusing = func(at refusal) {
		if at != insertFailed {
			return
		}
		s.refusing = nil
		if err := s.Add(&prio{"k0", 0}); err != nil {
			t.Error(err)
		}
		if err := s.Remove(k2.key); err != nil {
			t.Error(err)
		}
		if err := s.Release(k2.key); err != nil { // k2 leaves the pool
			t.Error(err)
		}
		if err := s.Remove("k0"); err != nil {
			t.Error(err)
		}
	}
	err := s.BatchAdd([]*prio{{"k0", 1}, {"k2", 2}})
	if !errors.Is(err, crserrors.ErrDuplicateKey) || errors.Is(err, crserrors.ErrResourceDraining) {
		t.Fatalf("BatchAdd = %v; want ErrDuplicateKey alone (k2 drained only while k0 was in the pool)", err)
	}
}

// heldK2 returns an exclusive one-shard scheduler holding k2, acquired.
func heldK2(t *testing.T) (*Scheduler[*prio, string], *prio) {
	t.Helper()
	s := newGlobal(t, 1, nil)
	k2 := &prio{"k2", 2}
	if err := s.Add(k2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.AcquireContext(context.Background()); err != nil || got != k2 {
		t.Fatalf("AcquireContext = %v, %v; want k2", got, err)
	}
	return s, k2
}
