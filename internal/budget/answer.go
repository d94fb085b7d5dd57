package budget

import (
	"time"

	"github.com/crsched/crs/config"
)

// What a provider's answer to a call does to a resource's budgets: the
// call is settled to what it spent (Settle), the provider's figures
// lower a bucket (Observe) or retune and raise it (Reconcile), and any
// answer shows that the provider has admitted a call (Admitted).

// Admitted tells every bucket that an answer came at now
// (Bucket.Admitted).
func (bs Budgets) Admitted(now int64) {
	for i := range bs {
		bs[i].Bucket.Admitted(now)
	}
}

// Settle corrects what the lease with token paid by what it actually
// spent, for the names actual gives, in the buckets it paid into: those
// born before it, rate limits aside. The answer came at now (Admitted).
func (bs Budgets) Settle(token uint64, paid, actual config.Cost, now int64) {
	bs.Admitted(now)
	for i := range bs {
		b := &bs[i]
		a, ok := actual[b.Name]
		if !ok || b.Born >= token || b.PerHold() {
			continue
		}
		b.Bucket.Settle(now, paid.Of(b.Name), a)
	}
}

// Named returns the budget called name, or nil; never a rate limit.
func (bs Budgets) Named(name string) *Budget {
	for i := range bs {
		if bs[i].Name == name && !bs[i].PerHold() {
			return &bs[i]
		}
	}
	return nil
}

// Observe lowers b to the provider's figure (Bucket.Clamp): remaining
// units now, full again after reset. A reset longer than b's Per
// describes another window than b's, so only remaining is applied then.
func (b *Budget) Observe(now, remaining int64, reset time.Duration) {
	if reset > b.Bucket.Per() {
		reset = 0
	}
	b.Bucket.Clamp(now, remaining, reset)
}

// Reconcile applies what the provider reported of b at now: a limit
// other than b's Max becomes its Max, Per kept (limit 0: not reported);
// then, unless remaining is negative (not reported), b is raised to
// remaining less uncounted, what the provider may not have counted yet,
// and lowered as Observe does.
func (b *Budget) Reconcile(now, limit, remaining int64, reset time.Duration, uncounted int64) {
	if limit > 0 && limit != b.Bucket.Max() {
		b.Bucket.Resize(now, config.Limit{Name: b.Name, Max: limit, Per: b.Bucket.Per(), Admission: b.Bucket.Admission()})
	}
	if remaining < 0 {
		return
	}
	b.Bucket.Raise(now, remaining-uncounted)
	b.Observe(now, remaining, reset)
}
