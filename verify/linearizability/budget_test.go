package linearizability

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/crsched/crs/verify/model"
)

var budgetHistories = flag.Int("budget.histories", 60, "number of concurrent budget histories to record and check")

// budgetShape is one kind of budget history.
type budgetShape struct {
	heaps     int
	exclusive bool
	clients   int
	opsEach   int
}

// budgetShapes: one shard and two, under both policies. At most
// budgetInFlight calls overlap (see shape.inFlight).
var budgetShapes = []budgetShape{
	{1, true, 6, 12},
	{1, false, 4, 16},
	{2, true, 5, 12},
	{2, false, 4, 14},
}

const budgetInFlight = 4

func budgetPorcupine(sp model.BudgetSpec) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return model.BState{} },
		Step: func(state, input, output any) (bool, any) {
			return sp.Step(state.(model.BState), input.(model.BInput), output.(model.BOutput))
		},
		Equal: func(a, b any) bool { return a.(model.BState) == b.(model.BState) },
		Hash:  func(state any) uint64 { return sp.Hash(state.(model.BState)) },
		DescribeOperation: func(input, output any) string {
			return model.DescribeBudget(input.(model.BInput), output.(model.BOutput))
		},
		DescribeState: func(state any) string { return sp.DescribeState(state.(model.BState)) },
	}
}

// recordBudget runs one budget history: client 0 adds every key first,
// then all clients call at once (at most budgetInFlight calls at a time),
// then each releases the leases it has left. A Step is recorded from its
// call to the step itself, which every call reads on one side of.
func recordBudget(p model.BudgetPool, sh budgetShape, seed uint64) []porcupine.Operation {
	var stamp atomic.Int64
	logs := make([][]porcupine.Operation, sh.clients)
	slots := make(chan struct{}, budgetInFlight)
	var advancing sync.Mutex
	var wg sync.WaitGroup
	begin, prologue := make(chan struct{}), make(chan struct{})
	for id := range sh.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(id)))
			c := &model.BClient{P: p, ID: id}
			do := func(in model.BInput) {
				slots <- struct{}{}
				defer func() { <-slots }()
				if in.Kind == model.BStep {
					advancing.Lock()
					defer advancing.Unlock()
					call := stamp.Add(1)
					var stepped int64
					p.Advance(in.Dur, func() { stepped = stamp.Add(1) })
					logs[id] = append(logs[id], porcupine.Operation{ClientId: id, Input: in, Call: call, Output: model.BOutput{Key: -1}, Return: stepped})
					return
				}
				call := stamp.Add(1)
				out := c.Do(in)
				logs[id] = append(logs[id], porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: stamp.Add(1)})
			}
			<-begin
			if id == 0 {
				for k := range model.BudgetKeys {
					do(model.BInput{Kind: model.BAdd, Key: k, Set: k % 3, Cap: 1 + k%2})
				}
				close(prologue)
			}
			<-prologue
			for range sh.opsEach {
				do(c.Next(r.IntN))
			}
			for i, l := range c.Leases {
				if l != nil {
					do(model.BInput{Kind: model.BRelease, Lease: id*model.BudgetLeases + i})
				}
			}
		}()
	}
	close(begin)
	wg.Wait()
	var ops []porcupine.Operation
	for _, l := range logs {
		ops = append(ops, l...)
	}
	return ops
}

// budgetHistory records history i of a run from seed, on a scheduler of
// its shape.
func budgetHistory(t *testing.T, i int, seed uint64) (budgetShape, []porcupine.Operation) {
	t.Helper()
	sh := budgetShapes[i%len(budgetShapes)]
	p, err := model.NewBudgetPool(sh.heaps, sh.exclusive)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	return sh, recordBudget(p, sh, seed+uint64(i))
}

// TestBudgetHistoriesAreLinearizable records concurrent histories of
// leases with costs, settlements, releases, cooldowns, updates that
// change the limits of leased resources, removals and steps of the clock,
// by tenants with limits of their own and at two priorities, and checks
// each against the budget model: every grant covered by every bucket of
// its resource and of its tenant, every level Remaining reports the
// model's.
func TestBudgetHistoriesAreLinearizable(t *testing.T) {
	n := *budgetHistories
	if testing.Short() {
		n = max(n/4, 1)
	}
	seed := baseSeed()
	t.Logf("seed %d (rerun with -lin.seed=%d)", seed, seed)
	var ops, grants, tenantGrants, levels int
	for i := range n {
		sh, history := budgetHistory(t, i, seed)
		ops += len(history)
		for _, op := range history {
			in, out := op.Input.(model.BInput), op.Output.(model.BOutput)
			switch {
			case in.Kind == model.BLease && out.Err == model.OK:
				grants++
				if in.Tenant != 0 {
					tenantGrants++
				}
			case in.Kind == model.BRemaining && out.Err == model.OK && (out.Has[0] || out.Has[1]):
				levels++
			}
		}
		sp := model.BudgetSpec{Exclusive: sh.exclusive}
		res, info := porcupine.CheckOperationsVerbose(budgetPorcupine(sp), history, *timeout)
		if res != porcupine.Ok {
			t.Fatalf("budget history %d (heaps=%d exclusive=%v, %d operations, seed %d) is %v\n%s\nrerun: go test -run 'TestBudgetHistoriesAreLinearizable$' -lin.seed=%d -budget.histories=%d",
				i, sh.heaps, sh.exclusive, len(history), seed+uint64(i), res, budgetListing(sp, history, info), seed, i+1)
		}
	}
	t.Logf("%d budget histories, %d operations (%d leases granted, %d of them to tenants with limits, %d readings of levels), all linearizable", n, ops, grants, tenantGrants, levels)
	if grants == 0 || tenantGrants == 0 || levels == 0 {
		t.Fatalf("%d grants, %d to tenants with limits, and %d readings of levels: the histories check nothing", grants, tenantGrants, levels)
	}
}

// budgetListing is the history in call order, with the longest
// linearizable prefix porcupine found and the model's state after it.
func budgetListing(sp model.BudgetSpec, ops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var b strings.Builder
	prefix := longest(info)
	state := model.BState{}
	for _, op := range prefix {
		_, state = sp.Step(state, op.Input.(model.BInput), op.Output.(model.BOutput))
	}
	fmt.Fprintf(&b, "longest linearizable prefix: %d of %d operations; state then: %s\n", len(prefix), len(ops), sp.DescribeState(state))
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	for _, op := range sorted {
		fmt.Fprintf(&b, "[%d,%d] c%d %s\n", op.Call, op.Return, op.ClientId, model.DescribeBudget(op.Input.(model.BInput), op.Output.(model.BOutput)))
	}
	return b.String()
}

// TestBudgetCheckerRejectsALeaseThatIgnoresItsCost holds the budget
// checker to its job: a scheduler whose leases spend the default cost (1
// token) instead of their estimate must be rejected, by the levels
// Remaining reads.
func TestBudgetCheckerRejectsALeaseThatIgnoresItsCost(t *testing.T) {
	seed := baseSeed()
	for i := range 40 {
		sh, history := budgetHistory(t, i, seed)
		// The same history, as a scheduler that took 1 token per lease
		// would have produced it: every estimate but the defaults.
		for j, op := range history {
			if in := op.Input.(model.BInput); in.Kind == model.BLease && in.Cost > 1 {
				in.Cost = 1
				history[j].Input = in
			}
		}
		sp := model.BudgetSpec{Exclusive: sh.exclusive}
		if porcupine.CheckOperationsTimeout(budgetPorcupine(sp), history, *timeout) == porcupine.Illegal {
			t.Logf("rejected at history %d", i)
			return
		}
	}
	t.Fatalf("40 histories with every estimate replaced by 1 all passed: the levels are not checked (seed %d)", seed)
}

// A scheduler that granted a tenant's leases beyond its own limits must
// be rejected: the same histories, as if every lease had named a tenant
// whose tokens allow two of the largest leases a second, are not
// linearizable against the model, which spends each grant from its
// tenant's buckets.
func TestBudgetCheckerRejectsGrantsBeyondATenantsLimits(t *testing.T) {
	seed := baseSeed()
	for i := range 40 {
		sh, history := budgetHistory(t, i, seed)
		for j, op := range history {
			if in := op.Input.(model.BInput); in.Kind == model.BLease {
				in.Tenant = 1 // "a": 120 tokens a second
				history[j].Input = in
			}
		}
		sp := model.BudgetSpec{Exclusive: sh.exclusive}
		if porcupine.CheckOperationsTimeout(budgetPorcupine(sp), history, *timeout) == porcupine.Illegal {
			t.Logf("rejected at history %d", i)
			return
		}
	}
	t.Fatalf("40 histories with every lease moved to one tenant all passed: tenants' limits are not checked (seed %d)", seed)
}
