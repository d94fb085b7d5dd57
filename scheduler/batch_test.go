package scheduler_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
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

// BatchAdd's slab groups the batch by shard, so its lookup map meets the
// keys in another order than the caller's. The error must still name the
// first taken key in the caller's order: here item 1, although the slab
// (items 0, 8, 1, 9, ... with 8 shards) puts item 8 first.
func TestBatchAddNamesTheFirstTakenKeyInTheBatchsOrder(t *testing.T) {
	s := newScheduler(t, baseConfig(8, config.Shared))
	addAll(t, s, w("taken-a", 0), w("taken-b", 0))
	batch := numbered(10)
	batch[1], batch[8] = w("taken-a", 1), w("taken-b", 8)
	err := s.BatchAdd(batch)
	wantErr(t, "BatchAdd", err, crserrors.ErrDuplicateKey)
	if msg := err.Error(); !strings.Contains(msg, "taken-a") || strings.Contains(msg, "taken-b") {
		t.Fatalf("BatchAdd error %q, want it to name taken-a (item 1) only", msg)
	}
	if s.Len() != 2 {
		t.Fatalf("Len = %d after a failed batch, want 2", s.Len())
	}
}

// A key repeated within the batch is named first, with its index in the
// caller's order, even when a key before it is already taken.
func TestBatchAddNamesARepeatBeforeATakenKey(t *testing.T) {
	s := newScheduler(t, baseConfig(8, config.Shared))
	addAll(t, s, w("taken", 0))
	batch := numbered(10)
	batch[0], batch[9] = w("taken", 0), w("w3", 9) // item 9 repeats item 3
	err := s.BatchAdd(batch)
	wantErr(t, "BatchAdd", err, crserrors.ErrDuplicateKey)
	if msg := err.Error(); !strings.Contains(msg, "item 9") || !strings.Contains(msg, "w3") {
		t.Fatalf("BatchAdd error %q, want it to name item 9 (w3, repeated)", msg)
	}
}
