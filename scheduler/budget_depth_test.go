package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// A cost that only a resource deep in its shard's heap can cover (the
// better-ranked ones have a smaller Max) is still served: it is not above
// every resource's limits, so it must not wait forever.
func TestACostOnlyADeepResourceCoversIsServed(t *testing.T) {
	var keys []*apiKey
	for i := range 100 {
		keys = append(keys, &apiKey{ID: fmt.Sprint("small", i), Priority: 0, TPM: 10})
	}
	keys = append(keys, &apiKey{ID: "big", Priority: 1, TPM: 1000})
	s := newKeyPool(t, nil, config.Shared, 1, keys...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := s.Lease(ctx, tokens(500))
	if err != nil {
		t.Fatalf("a cost of 500, which the idle key big (Max 1000) covers: %v", err)
	}
	l.Release()
}
