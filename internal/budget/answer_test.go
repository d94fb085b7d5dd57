package budget

import (
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

func answerBudgets() Budgets {
	bs := New([]config.Limit{{Name: "tokens", Max: 100, Per: time.Second}}, 0, 0)
	bs = append(bs, Budget{Name: "late", Bucket: NewBucket(config.Limit{Name: "late", Max: 100, Per: time.Second}, 0), Born: 5})
	return append(bs, Budget{Bucket: NewBucket(config.Limit{Max: 3, Per: time.Second}, 0)}) // a rate limit
}

// Settle corrects only the buckets the lease paid into: not one born
// after it, not a rate limit, not a name the answer leaves out.
func TestSettleCorrectsOnlyTheBucketsTheLeasePaidInto(t *testing.T) {
	bs := answerBudgets()
	paid := config.Cost{"tokens": 60, "late": 60}
	bs[0].Bucket.Take(0, 60)
	bs[2].Bucket.Take(0, 1)
	bs.Settle(3, paid, config.Cost{"tokens": 10, "late": 10, "": 0}, 0)
	if got := bs[0].Bucket.Level(0); got != 90 {
		t.Fatalf("tokens after settling 60 to 10: %d, want 90", got)
	}
	if got := bs[1].Bucket.Level(0); got != 100 {
		t.Fatalf("a bucket born after the lease was settled: %d, want 100", got)
	}
	if got := bs[2].Bucket.Level(0); got != 2 {
		t.Fatalf("the rate limit was settled: %d, want 2", got)
	}
}

// Named finds a limit by name, never the rate limit.
func TestNamedFindsALimitButNeverTheRateLimit(t *testing.T) {
	bs := answerBudgets()
	if b := bs.Named("late"); b != &bs[1] {
		t.Fatal("Named(late) did not return its budget")
	}
	if bs.Named("") != nil || bs.Named("nope") != nil {
		t.Fatal("Named found the rate limit or a name that is not there")
	}
}

// Reconcile retunes a Max the provider states, then raises the bucket
// to what the provider has left less what it may not have counted, and
// never above the provider's figure.
func TestReconcileRetunesThenRaisesNoHigherThanTheProviderLessTheUncounted(t *testing.T) {
	bs := answerBudgets()
	b := &bs[0]
	b.Bucket.Take(0, 90) // 10 left
	b.Reconcile(0, 200, 80, 0, 30)
	if b.Bucket.Max() != 200 {
		t.Fatalf("Max %d after a reported limit of 200", b.Bucket.Max())
	}
	if got := b.Bucket.Level(0); got != 50 {
		t.Fatalf("level %d after remaining 80 with 30 uncounted, want 50", got)
	}
	b.Reconcile(0, 0, 20, 0, 0)
	if got := b.Bucket.Level(0); got != 20 {
		t.Fatalf("level %d after remaining 20, want 20 (lowered)", got)
	}
	b.Reconcile(0, 0, -1, 0, 0)
	if got := b.Bucket.Level(0); got != 20 {
		t.Fatalf("level %d after no remaining reported, want 20", got)
	}
}
