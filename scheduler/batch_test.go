package scheduler_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

func TestBatchAddInsertsEverything(t *testing.T) {
	for _, heaps := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(heaps), func(t *testing.T) {
			s := newScheduler(t, baseConfig(heaps, config.Exclusive))
			if err := s.BatchAdd(numbered(100)); err != nil {
				t.Fatal(err)
			}
			if s.Len() != 100 {
				t.Fatalf("Len = %d", s.Len())
			}
			mustInvariants(t, s)
			// HeapCount 1 gives a total order: all 100 in priority order.
			if heaps == 1 {
				for i := 0; i < 100; i++ {
					got, err := s.Acquire()
					if err != nil || got.Priority != i {
						t.Fatalf("Acquire #%d = %v, %v", i, got, err)
					}
				}
			}
		})
	}
}

func TestBatchAddIsAllOrNothing(t *testing.T) {
	tests := []struct {
		name  string
		batch []*worker
		want  error
	}{
		{"nil in the batch", []*worker{w("n1", 1), nil, w("n2", 2)}, crserrors.ErrNilResource},
		{"key repeated within the batch", []*worker{w("d1", 1), w("d2", 2), w("d1", 3)}, crserrors.ErrDuplicateKey},
		{"key already present", []*worker{w("p1", 1), w("existing", 2), w("p2", 3)}, crserrors.ErrDuplicateKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduler(t, baseConfig(4, config.Shared))
			addAll(t, s, w("existing", 0))
			wantErr(t, "BatchAdd", s.BatchAdd(tt.batch), tt.want)
			if s.Len() != 1 {
				t.Fatalf("Len = %d after a failed batch, want 1", s.Len())
			}
			for _, v := range tt.batch {
				if v != nil && v.ID != "existing" {
					wantState(t, s, v.ID, "absent")
				}
			}
			if got, _ := s.Get("existing"); got.Priority != 0 {
				t.Fatal("failed batch changed the existing resource")
			}
		})
	}
}

func TestBatchAddOfNothingSucceeds(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Shared))
	if err := s.BatchAdd(nil); err != nil {
		t.Fatal(err)
	}
}

// TestBatchAddRacingAddOfSameKeyHasOneWinner: a key added concurrently
// by Add and inside a batch ends up present exactly once, and the batch
// is either wholly in or wholly out.
func TestBatchAddRacingAddOfSameKeyHasOneWinner(t *testing.T) {
	for round := 0; round < 200; round++ {
		s := newScheduler(t, baseConfig(4, config.Shared))
		batch := []*worker{w("b0", 1), w("contested", 2), w("b2", 3), w("b3", 4), w("b4", 5)}
		var batchErr, addErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); batchErr = s.BatchAdd(batch) }()
		go func() { defer wg.Done(); addErr = s.Add(w("contested", 9)) }()
		wg.Wait()
		if (batchErr == nil) == (addErr == nil) {
			t.Fatalf("round %d: batch %v, add %v: want exactly one to succeed", round, batchErr, addErr)
		}
		wantLen := 1
		if batchErr == nil {
			wantLen = len(batch)
		} else if !errors.Is(batchErr, crserrors.ErrDuplicateKey) {
			t.Fatalf("batch error %v", batchErr)
		}
		if s.Len() != wantLen {
			t.Fatalf("round %d: Len = %d, want %d", round, s.Len(), wantLen)
		}
		mustInvariants(t, s)
	}
}

// TestBatchAddIsNeverSeenHalfDone watches a batch go in from other
// goroutines: once any member is visible, all members are.
func TestBatchAddIsNeverSeenHalfDone(t *testing.T) {
	const size = 64
	for round := 0; round < 50; round++ {
		s := newScheduler(t, baseConfig(8, config.Shared))
		batch := numbered(size)
		var wg sync.WaitGroup
		done := make(chan struct{})
		var violation error
		var mu sync.Mutex
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					_, lastErr := s.Get(batch[size-1].ID)
					if lastErr != nil {
						continue
					}
					n := s.Len()
					_, firstErr := s.Get(batch[0].ID)
					if firstErr != nil || n != size {
						mu.Lock()
						violation = fmt.Errorf("last member visible, first: %v, Len %d", firstErr, n)
						mu.Unlock()
					}
				}
			}()
		}
		if err := s.BatchAdd(batch); err != nil {
			t.Fatal(err)
		}
		close(done)
		wg.Wait()
		if violation != nil {
			t.Fatalf("round %d: %v", round, violation)
		}
	}
}

// drainingKey adds a resource with key id, holds it and removes it, so
// that its key stays taken while it drains.
func drainingKey(t *testing.T, s *scheduler.Scheduler[*worker, string], id string) {
	t.Helper()
	addAll(t, s, w(id, -1))
	if got, err := s.Acquire(); err != nil || got.ID != id {
		t.Fatalf("Acquire = %v, %v, want %s", got, err, id)
	}
	if err := s.Remove(id); err != nil {
		t.Fatal(err)
	}
}

// BatchAdd's slab groups the batch by shard, so its lookup map meets the
// keys in another order than the caller's. The error must still be that
// of the first taken key in the caller's order: here item 1, a plain
// duplicate (ErrDuplicateKey itself), although the slab (items 0, 8, 1,
// 9, ... with 8 shards) puts item 8, a draining key, first.
func TestBatchAddReportsTheFirstTakenKeyInTheBatchsOrder(t *testing.T) {
	s := newScheduler(t, baseConfig(8, config.Exclusive))
	drainingKey(t, s, "taken-b")
	addAll(t, s, w("taken-a", 0))
	batch := numbered(10)
	batch[1], batch[8] = w("taken-a", 1), w("taken-b", 8)
	if err := s.BatchAdd(batch); err != crserrors.ErrDuplicateKey {
		t.Fatalf("BatchAdd: %v, want ErrDuplicateKey itself (taken-a, item 1)", err)
	}
	batch[1], batch[8] = w("taken-b", 1), w("taken-a", 8)
	err := s.BatchAdd(batch)
	wantErr(t, "BatchAdd", err, crserrors.ErrResourceDraining)
	wantErr(t, "BatchAdd", err, crserrors.ErrDuplicateKey)
	if s.Len() != 1 {
		t.Fatalf("Len = %d after failed batches, want 1", s.Len())
	}
}

// A key repeated within the batch decides the error, even when a key
// before it belongs to a draining resource: the batch could not go in
// whatever the pool held.
func TestBatchAddReportsARepeatBeforeATakenKey(t *testing.T) {
	s := newScheduler(t, baseConfig(8, config.Exclusive))
	drainingKey(t, s, "taken")
	batch := numbered(10)
	batch[0], batch[9] = w("taken", 0), w("w3", 9) // item 9 repeats item 3
	if err := s.BatchAdd(batch); err != crserrors.ErrDuplicateKey {
		t.Fatalf("BatchAdd: %v, want ErrDuplicateKey itself (w3 repeated)", err)
	}
}
