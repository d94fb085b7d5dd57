package scheduler_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// caller is one goroutine of a closed loop over one exclusive resource
// (see takeTurns): it leases with opts, holds, releases, and leases
// again.
type caller struct {
	tenant string
	opts   []scheduler.LeaseOption
	units  int64 // its share units per grant, for the shares
}

func callers(n int, tenant string, units int64, opts ...scheduler.LeaseOption) []caller {
	cs := make([]caller, n)
	for i := range cs {
		cs[i] = caller{tenant: tenant, opts: opts, units: units}
	}
	return cs
}

// takeTurns runs cs in a closed loop over s's one exclusive resource for
// n grants and returns which caller had each. Each caller is a goroutine
// that leases, holds until told, releases and leases again; every grant
// is decided while all the other callers wait, so the sequence depends
// on the order of service alone, not on how goroutines are scheduled.
func takeTurns(t *testing.T, s *scheduler.Scheduler[*worker, string], cs []caller, n int) []int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	first, err := s.Lease(ctx) // held while the callers queue
	if err != nil {
		t.Fatal(err)
	}
	type turn struct {
		who  int
		done chan struct{}
	}
	turns := make(chan turn)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := s.Lease(ctx, c.opts...)
				if err != nil {
					return
				}
				done := make(chan struct{})
				turns <- turn{i, done}
				<-done
				_ = l.Release()
			}
		}()
	}
	waitForWaiters(s, len(cs))
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	var seq []int
	for range n {
		tn := <-turns
		seq = append(seq, tn.who)
		waitForWaiters(s, len(cs)-1)
		close(tn.done)
	}
	cancel()
	go func() {
		for tn := range turns { // a grant at the instant of the cancel
			close(tn.done)
		}
	}()
	wg.Wait()
	close(turns)
	return seq
}

// waitForWaiters yields until n callers wait in s.
func waitForWaiters[T any](s *scheduler.Scheduler[T, string], n int) {
	for s.Stats().Waiters != n {
		runtime.Gosched()
	}
}

// shares sums the share units of each tenant's grants in seq, as a
// fraction of all.
func shares(cs []caller, seq []int) map[string]float64 {
	units := map[string]int64{}
	var total int64
	for _, i := range seq {
		units[cs[i].tenant] += cs[i].units
		total += cs[i].units
	}
	out := map[string]float64{}
	for k, u := range units {
		out[k] = float64(u) / float64(total)
	}
	return out
}

func onePool(t *testing.T, cfg config.Config[*worker, string]) *scheduler.Scheduler[*worker, string] {
	t.Helper()
	s := newScheduler(t, cfg)
	addAll(t, s, w("k", 0))
	return s
}

func wantShare(t *testing.T, got map[string]float64, tenant string, want, within float64) {
	t.Helper()
	if d := got[tenant] - want; d > within || d < -within {
		t.Fatalf("tenant %q has a share of %.3f, want %.2f +/- %.2f (shares %v)", tenant, got[tenant], want, within, got)
	}
	t.Logf("tenant %q: share %.3f", tenant, got[tenant])
}

// Twelve callers of one tenant and two of another, equal weights, take
// turns at one resource: each tenant gets half of the grants, where
// first come, first served gives the first 12/14.
func TestTenantsWithEqualWeightsShareGrantsEqually(t *testing.T) {
	s := onePool(t, baseConfig(1, config.Exclusive))
	cs := append(callers(12, "a", 1, scheduler.WithTenant("a")), callers(2, "b", 1, scheduler.WithTenant("b"))...)
	wantShare(t, shares(cs, takeTurns(t, s, cs, 1400)), "a", 0.5, 0.03)
}

// Without tenants the same callers are served first come, first served.
func TestCallersWithoutTenantsAreServedInTurn(t *testing.T) {
	s := onePool(t, baseConfig(1, config.Exclusive))
	cs := append(callers(12, "a", 1), callers(2, "b", 1)...)
	wantShare(t, shares(cs, takeTurns(t, s, cs, 1400)), "a", 12.0/14, 0.03)
}

// Weights 3:1 give the heavier tenant three grants in four.
func TestTenantsShareGrantsByWeight(t *testing.T) {
	cfg := baseConfig(1, config.Exclusive)
	cfg.Tenants = func(name string) config.Tenant {
		if name == "a" {
			return config.Tenant{Weight: 3}
		}
		return config.Tenant{}
	}
	s := onePool(t, cfg)
	cs := append(callers(12, "a", 1, scheduler.WithTenant("a")), callers(2, "b", 1, scheduler.WithTenant("b"))...)
	wantShare(t, shares(cs, takeTurns(t, s, cs, 1400)), "a", 0.75, 0.03)
}

// With ShareBy "tokens", a tenant whose calls cost ten times the other's
// gets a tenth of the grants and half of the tokens.
func TestTenantsShareTheUnitsNamedByShareBy(t *testing.T) {
	cfg := baseConfig(1, config.Exclusive)
	cfg.ShareBy = "tokens"
	s := onePool(t, cfg)
	big := []scheduler.LeaseOption{scheduler.WithTenant("a"), scheduler.WithCost(config.Cost{"tokens": 10}), scheduler.AllowUnknownLimits()}
	small := []scheduler.LeaseOption{scheduler.WithTenant("b"), scheduler.WithCost(config.Cost{"tokens": 1}), scheduler.AllowUnknownLimits()}
	cs := append(callers(12, "a", 10, big...), callers(2, "b", 1, small...)...)
	wantShare(t, shares(cs, takeTurns(t, s, cs, 2200)), "a", 0.5, 0.05)
	st := s.Stats()
	var a, b int64
	for _, ts := range st.Tenants {
		switch ts.Name {
		case "a":
			a = ts.Usage
		case "b":
			b = ts.Usage
		}
	}
	if a == 0 || b == 0 || float64(a)/float64(a+b) < 0.45 || float64(a)/float64(a+b) > 0.55 {
		t.Fatalf("Stats usage a %d, b %d: want about equal", a, b)
	}
}

// An interactive caller at priority 5 among 16 batch callers that keep
// the resource busy waits only for the hold in progress: no batch grant
// begins while it waits.
func TestAHigherPriorityWaiterGoesBeforeEveryLowerOne(t *testing.T) {
	s := onePool(t, baseConfig(1, config.Exclusive))
	cs := append(callers(16, "batch", 1), caller{tenant: "interactive", opts: []scheduler.LeaseOption{scheduler.WithPriority(5)}, units: 1})
	seq := takeTurns(t, s, cs, 400)
	interactive, waited := 16, []int{}
	since := -1 // index of the interactive caller's last grant
	for i, who := range seq {
		if who != interactive {
			continue
		}
		if since >= 0 {
			// It queued again once its hold ended; the grant after
			// its own was already decided then.
			waited = append(waited, i-since-2)
		}
		since = i
	}
	if len(waited) < 100 {
		t.Fatalf("the interactive caller had %d grants of 400", len(waited)+1)
	}
	for _, n := range waited {
		if n > 0 {
			t.Fatalf("a batch grant began while the interactive caller waited: %v", waited)
		}
	}
}

// A tenant back from idle banks no credit: a tenant that had the
// resource to itself, then one that joins, then share from then on.
func TestATenantBackFromIdleGetsItsShareNotABurst(t *testing.T) {
	s := onePool(t, baseConfig(1, config.Exclusive))
	solo := callers(2, "a", 1, scheduler.WithTenant("a"))
	takeTurns(t, s, solo, 300) // b idle: a's time runs far ahead
	cs := append(callers(2, "a", 1, scheduler.WithTenant("a")), callers(2, "b", 1, scheduler.WithTenant("b"))...)
	seq := takeTurns(t, s, cs, 40)
	for i := 0; i+4 <= len(seq); i += 4 {
		got := shares(cs, seq[i:i+4])
		if got["b"] > 0.75 {
			t.Fatalf("b took %v of grants %d-%d after being idle: a burst", got["b"], i, i+4)
		}
	}
}

// tenantPool is a pool of n exclusive resources, each good for perSecond
// hand-outs a second, on a fake clock, whose tenants are given by cfg.
func tenantPool(t *testing.T, n int, perSecond float64, tenants map[string]config.Tenant) (*scheduler.Scheduler[*worker, string], *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New()
	cfg := baseConfig(2, config.Exclusive)
	cfg.Clock = clock
	cfg.RateLimit = func(*worker) (float64, int) { return perSecond, 1 }
	cfg.Tenants = func(name string) config.Tenant { return tenants[name] }
	s := newScheduler(t, cfg)
	for i := range n {
		addAll(t, s, w(string(rune('a'+i)), i))
	}
	return s, clock
}

// leaseNowAs leases for tenant without waiting, and reports whether it
// got one.
func leaseNowAs(s *scheduler.Scheduler[*worker, string], tenant string, opts ...scheduler.LeaseOption) (scheduler.Lease[*worker, string], bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := s.Lease(ctx, append(opts, scheduler.WithTenant(tenant))...)
	return l, err == nil
}

// A tenant limit of 20 a second is never exceeded in any window (the
// referee: at most Max + Max*t/Per in a window of length t), the limited
// tenant still gets its 20 a second, and another tenant gets at least
// 0.9x what it gets alone.
func TestATenantLimitHoldsInEveryWindowAndLeavesTheRestToOthers(t *testing.T) {
	limit := config.Limit{Name: "requests", Max: 20, Per: time.Second}
	run := func(withLimited bool) (limited []time.Duration, other int) {
		s, clock := tenantPool(t, 8, 50, map[string]config.Tenant{"limited": {Limits: []config.Limit{limit}}})
		const step, span = time.Millisecond, 10 * time.Second
		for at := time.Duration(0); at < span; at += step {
			for withLimited {
				l, ok := leaseNowAs(s, "limited")
				if !ok {
					break
				}
				limited = append(limited, at)
				_ = l.Release()
			}
			for {
				l, ok := leaseNowAs(s, "other")
				if !ok {
					break
				}
				other++
				_ = l.Release()
			}
			clock.Advance(step)
		}
		return limited, other
	}
	limited, other := run(true)
	_, alone := run(false)
	refereeWindows(t, limited, limit)
	if got := float64(len(limited)) / 10; got < 19 || got > 22 {
		t.Fatalf("the limited tenant got %.1f a second, want its 20", got)
	}
	if float64(other) < 0.9*float64(alone) {
		t.Fatalf("the other tenant got %d grants, %d alone: below 0.9x", other, alone)
	}
	t.Logf("limited %.1f/s; other %d vs %d alone (%.3fx)", float64(len(limited))/10, other, alone, float64(other)/float64(alone))
}

// refereeWindows checks every window between two grants at times at
// (sorted), each of one unit, against l: at most Max + Max*t/Per.
func refereeWindows(t *testing.T, at []time.Duration, l config.Limit) {
	t.Helper()
	for i := range at {
		for j := i; j < len(at); j++ {
			allowed := float64(l.Max) + float64(l.Max)*float64(at[j]-at[i])/float64(l.Per)
			if float64(j-i+1) > allowed {
				t.Fatalf("%d grants in [%v, %v]: above %v", j-i+1, at[i], at[j], allowed)
			}
		}
	}
}

// A waiter whose tenant's budget is spent holds back no other tenant:
// the resource goes to the next tenant's waiter, and the waiter is
// served when its tenant's budget refills, by the wake, without polling.
func TestAWaiterOnItsTenantsLimitHoldsBackNoOtherTenant(t *testing.T) {
	limit := config.Limit{Name: "requests", Max: 1, Per: time.Second}
	s, clock := tenantPool(t, 1, 1e6, map[string]config.Tenant{"limited": {Limits: []config.Limit{limit}}})
	first, ok := leaseNowAs(s, "limited") // spends its one unit
	if !ok {
		t.Fatal("the limited tenant's first lease failed")
	}
	got := make(chan string, 2)
	lease := func(tenant string) {
		l, err := s.Lease(context.Background(), scheduler.WithTenant(tenant))
		if err == nil {
			got <- tenant
			_ = l.Release()
		}
	}
	go lease("limited")
	waitForWaiters(s, 1)
	go lease("other")
	waitForWaiters(s, 2)
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Millisecond) // the resource's own rate limit
	if who := <-got; who != "other" {
		t.Fatalf("the freed resource went to %q, not to the tenant that could use it", who)
	}
	clock.Advance(time.Second)
	if who := <-got; who != "limited" {
		t.Fatalf("the refill served %q", who)
	}
}

// A cost above the tenant's Max fails at once, as one above every
// resource's does.
func TestACostAboveItsTenantsMaxFailsAtOnce(t *testing.T) {
	limit := config.Limit{Name: "tokens", Max: 100, Per: time.Minute}
	s, _ := tenantPool(t, 1, 1e6, map[string]config.Tenant{"t": {Limits: []config.Limit{limit}}})
	_, err := s.Lease(context.Background(), scheduler.WithTenant("t"), scheduler.WithCost(config.Cost{"tokens": 101}), scheduler.AllowUnknownLimits())
	if !errors.Is(err, crserrors.ErrCostExceedsLimits) {
		t.Fatalf("Lease = %v, want ErrCostExceedsLimits", err)
	}
}

// Tenants that are invalid, or whose Tenants call panics, make the Lease
// fail with ErrInvalidTenant and keep nothing: the next call asks again.
func TestAnInvalidOrPanickingTenantFailsTheLeaseAndIsAskedAgain(t *testing.T) {
	asked := map[string]int{}
	cfg := baseConfig(1, config.Exclusive)
	cfg.Tenants = func(name string) config.Tenant {
		asked[name]++
		switch name {
		case "heavy":
			return config.Tenant{Weight: config.MaxUnits + 1}
		case "bad":
			return config.Tenant{Limits: []config.Limit{{Name: "", Max: 1, Per: time.Second}}}
		case "panics":
			if asked[name] == 1 {
				panic("no such team")
			}
		}
		return config.Tenant{Weight: 2}
	}
	s := onePool(t, cfg)
	for _, name := range []string{"heavy", "bad", "panics"} {
		if _, err := s.Lease(context.Background(), scheduler.WithTenant(name)); !errors.Is(err, crserrors.ErrInvalidTenant) {
			t.Fatalf("tenant %q: Lease = %v, want ErrInvalidTenant", name, err)
		}
	}
	l, err := s.Lease(context.Background(), scheduler.WithTenant("panics"))
	if err != nil {
		t.Fatalf("the tenant whose first answer panicked: %v", err)
	}
	_ = l.Release()
	l, _ = s.Lease(context.Background(), scheduler.WithTenant("panics"))
	_ = l.Release()
	if asked["panics"] != 2 || asked[""] != 1 {
		t.Fatalf("Tenants asked %v: want a panicked answer asked again, a good one kept", asked)
	}
	if _, err := scheduler.New(config.Config[*worker, string]{Comparator: byPriority, KeyFunc: workerID,
		Tenants: func(string) config.Tenant { return config.Tenant{Weight: -1} }}); !errors.Is(err, crserrors.ErrInvalidTenant) {
		t.Fatalf("New with an invalid default tenant = %v, want ErrInvalidTenant", err)
	}
}

// A comparator that panics while a lease takes its resource gives back
// what the lease took from its tenant's budget too.
func TestAComparatorPanicInALeaseRefundsItsTenant(t *testing.T) {
	var boom bool
	cfg := baseConfig(1, config.Shared)
	cfg.Comparator = func(a, b *worker) int {
		if boom {
			panic("boom")
		}
		return byPriority(a, b)
	}
	cfg.Tenants = func(string) config.Tenant {
		return config.Tenant{Limits: []config.Limit{{Name: "requests", Max: 1, Per: time.Hour}}}
	}
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 0), w("b", 1), w("c", 2))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the comparator was not called: the test proves nothing")
			}
		}()
		boom = true
		defer func() { boom = false }()
		_, _ = s.Lease(context.Background(), scheduler.WithTenant("t"))
	}()
	if _, ok := leaseNowAs(s, "t"); !ok {
		t.Fatal("the panicked lease spent its tenant's only unit")
	}
}

// Stats break waiters and grants down by tenant and by priority.
func TestStatsCountWaitersAndGrantsByTenantAndPriority(t *testing.T) {
	s := onePool(t, baseConfig(1, config.Exclusive))
	if st := s.Stats(); st.Tenants != nil || st.Priorities != nil {
		t.Fatal("Stats broke a pool without tenants down by tenant")
	}
	held, err := s.Lease(context.Background(), scheduler.WithTenant("a"), scheduler.WithPriority(2))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		l, err := s.Lease(context.Background(), scheduler.WithTenant("b"))
		if err == nil {
			_ = l.Release()
		}
		close(done)
	}()
	waitForWaiters(s, 1)
	st := s.Stats()
	want := []struct {
		name            string
		waiters, grants int
	}{{"a", 0, 1}, {"b", 1, 0}}
	if len(st.Tenants) != 2 || len(st.Priorities) != 2 || st.Priorities[0].Priority != 2 {
		t.Fatalf("Stats: tenants %+v, priorities %+v", st.Tenants, st.Priorities)
	}
	for i, w := range want {
		if g := st.Tenants[i]; g.Name != w.name || g.Waiters != w.waiters || int(g.Grants) != w.grants {
			t.Fatalf("tenant %d: %+v, want %+v", i, g, w)
		}
	}
	_ = held.Release()
	<-done
}

// A waiter whose cost no resource covers holds back only its own tenant:
// another tenant's smaller cost is served at once, while a later call of
// the same tenant queues behind it, and the refill serves it.
func TestAWaiterWhoseCostNoResourceCoversHoldsBackOnlyItsTenant(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "k", TPM: 100})
	l := leaseNow(t, s, tokens(50), scheduler.WithTenant("x"))
	_ = l.Release()
	big := leaseLater(context.Background(), s, tokens(80), scheduler.WithTenant("x"))
	waitForWaiters(s, 1)
	other := leaseNow(t, s, tokens(10), scheduler.WithTenant("y"))
	_ = other.Release()
	same := leaseLater(context.Background(), s, tokens(10), scheduler.WithTenant("x"))
	waitForWaiters(s, 2)
	select {
	case <-same:
		t.Fatal("a call passed the waiter of its own tenant")
	default:
	}
	clock.Advance(time.Minute)
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if err := <-same; err != nil {
		t.Fatal(err)
	}
}

// A refund of a tenant's budget, by Settle or by Reconcile (which
// settles as Settle does), serves the waiter parked on it at once, not
// when the refill would have.
func TestARefundServesAWaiterParkedOnItsTenant(t *testing.T) {
	refunds := map[string]func(l scheduler.Lease[*worker, string]) error{
		"settle":    func(l scheduler.Lease[*worker, string]) error { return l.Settle(config.Cost{"tokens": 0}) },
		"reconcile": func(l scheduler.Lease[*worker, string]) error { return l.Reconcile(config.Cost{"tokens": 0}, nil) },
	}
	for name, refund := range refunds {
		t.Run(name, func(t *testing.T) {
			limit := config.Limit{Name: "tokens", Max: 100, Per: time.Hour}
			s, clock := tenantPool(t, 2, 1e9, map[string]config.Tenant{"t": {Limits: []config.Limit{limit}}})
			opts := []scheduler.LeaseOption{scheduler.WithCost(config.Cost{"tokens": 100}), scheduler.AllowUnknownLimits()}
			l, ok := leaseNowAs(s, "t", opts...)
			if !ok {
				t.Fatal("the first lease failed")
			}
			got := make(chan error, 1)
			go func() {
				l2, err := s.Lease(context.Background(), append(opts, scheduler.WithTenant("t"))...)
				if err == nil {
					err = l2.Release()
				}
				got <- err
			}()
			waitForWaiters(s, 1)
			if err := refund(l); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Nanosecond) // the kick: a wake due now, on the timer; the refill takes an hour
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			_ = l.Release()
		})
	}
}

// Settle and Reconcile correct a tenant's usage (config.Config.ShareBy)
// to what the lease spent, the same way.
func TestSettleAndReconcileCorrectATenantsUsageAlike(t *testing.T) {
	for _, how := range []string{"settle", "reconcile"} {
		t.Run(how, func(t *testing.T) {
			cfg := baseConfig(1, config.Exclusive)
			cfg.ShareBy = "tokens"
			s := onePool(t, cfg)
			l, ok := leaseNowAs(s, "a", scheduler.WithCost(config.Cost{"tokens": 10}), scheduler.AllowUnknownLimits())
			if !ok {
				t.Fatal("the lease failed")
			}
			var err error
			if how == "settle" {
				err = l.Settle(config.Cost{"tokens": 3})
			} else {
				err = l.Reconcile(config.Cost{"tokens": 3}, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			_ = l.Release()
			var usage int64 = -1
			for _, ts := range s.Stats().Tenants {
				if ts.Name == "a" {
					usage = ts.Usage
				}
			}
			if usage != 3 {
				t.Fatalf("tenant a's usage %d after the %s, want 3", usage, how)
			}
		})
	}
}
