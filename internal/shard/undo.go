package shard

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
)

// undo is the one way a step is rolled back: a record of what the step
// changes of one node, taken before the change, so that the step can be
// undone if the comparator panics in it.
//
// A step saves a node (Save) before it changes anything that a
// later comparator call could leave half done: always its state, its
// place in the heap and its rest, and what the step names besides
// (Saving). If the comparator panics, the shard is left broken (see
// Shard.Broken) and Unlock, which ends every step, puts the node back as
// it was saved. Changes a step makes after its last comparator call
// (queueing deadlines, ending a lease's record, events) need no record.
// A step that saves a second node (a release that hands the freed
// resource to a waiter) has finished with the first: only the last node
// saved is put back. A step that adds a batch saves it whole (SaveBatch),
// in every shard the batch goes into: each shard's Unlock takes its own
// part out again.
type undo[T any, ID comparable] struct {
	n         *node.Node[T, ID]  // nil: nothing saved
	batch     []node.Node[T, ID] // a batch being added; nil: none
	what      Saving
	state     node.State
	rest      node.Rest
	restUntil int64

	value               T
	holders, capacity   int32
	failures, ejections int
	budgets             budget.Budgets // the node's budgets as they were
	levels              budget.Budgets // their contents; the buffer is kept
	fullAt              int64
	lease               *node.Lease // a lease record the step changes
	cost                map[string]int64

	// tenant gets back what the step took from its budgets (SaveSpend);
	// Save leaves it alone, since the tenant pays before the node is
	// saved.
	tenant  *budget.Tenant
	spent   config.Cost
	spentAt int64
}

// SaveSpend records that the step took cost from tenant t's budgets at
// at, for the step's undo to give back. Requires s.mu; a Save of the
// node the tenant pays for follows before any comparator call.
func (s *Shard[T, ID]) SaveSpend(t *budget.Tenant, cost config.Cost, at int64) {
	u := &s.undo
	u.tenant, u.spent, u.spentAt = t, cost, at
}

// Saving names what a step changes besides a node's state and rest.
type Saving uint8

const (
	SavingValue   Saving = 1 << iota // Value (Stage)
	SavingHolders                    // Holders and Capacity
	SavingHealth                     // the failure and ejection counts
	SavingBudgets                    // the budgets (a rate limit's too) and FullAt
	SavingInsert                     // n was just put into the lookup map: a rollback takes it out
)

// Save records n, and what of it the step will change, for the step's
// undo (see undo). Requires s.mu.
func (s *Shard[T, ID]) Save(n *node.Node[T, ID], what Saving) {
	u := &s.undo
	u.n, u.what, u.lease = n, what, nil
	u.state, u.rest, u.restUntil = n.State, n.Rest, n.RestUntil
	if what&SavingValue != 0 {
		u.value = n.Value
	}
	if what&SavingHolders != 0 {
		u.holders, u.capacity = n.Holders, n.Capacity
	}
	if what&SavingHealth != 0 {
		u.failures, u.ejections = n.Health()
	}
	if what&SavingBudgets != 0 {
		u.fullAt = n.FullAt()
		u.budgets = n.Budgets()
		u.levels = append(u.levels[:0], u.budgets...)
	}
}

// Commit ends the step's record: its changes to the saved node stand,
// whatever comes after. A step commits after its last comparator call on
// that node. Requires s.mu.
func (s *Shard[T, ID]) Commit() {
	s.undo.n, s.undo.lease, s.undo.batch, s.undo.tenant = nil, nil, nil, nil
}

// SaveBatch records a batch of new nodes, in the lookup map and about to
// go into the heaps of their shards, for the undo of the step that adds
// them: a rollback takes the nodes of this shard out of its heap and
// out of the map. Requires s.mu.
func (s *Shard[T, ID]) SaveBatch(slab []node.Node[T, ID]) { s.undo.batch = slab }

// rollbackBatch takes this shard's part of the saved batch out of the
// heap and the map: nothing of the batch was visible.
func (s *Shard[T, ID]) rollbackBatch() {
	for i := range s.undo.batch {
		n := &s.undo.batch[i]
		if int(n.Shard) != s.Index {
			continue
		}
		if n.Index >= 0 {
			s.Heap.Delete(int(n.Index))
		}
		n.State = node.Removed
		s.nodes.Delete(n.Key)
	}
	s.Publish()
}

// SaveLease adds the cost of lease record e to what the step's undo puts
// back. Requires s.mu, after Save.
func (s *Shard[T, ID]) SaveLease(e *node.Lease) {
	s.undo.lease, s.undo.cost = e, e.Cost
}

// rollback puts the saved node back as it was saved. It runs in Unlock,
// after a comparator panic, and calls no user code: the node goes back
// into or out of the heap without ordering it, and the shard stays
// broken for its next user to repair.
func (s *Shard[T, ID]) rollback() {
	u := &s.undo
	if u.batch != nil {
		s.rollbackBatch()
		return
	}
	n := u.n
	back := s.LimitsOnly(n)
	if u.what&SavingHolders != 0 {
		s.Holders += int(u.holders - n.Holders)
		n.Holders, n.Capacity = u.holders, u.capacity
	}
	if u.what&SavingValue != 0 {
		n.Stage(u.value) // unpublished: Place publishes only a heap in order
	}
	if u.what&SavingHealth != 0 {
		n.SetHealth(u.failures, u.ejections)
	}
	if u.what&SavingBudgets != 0 {
		n.SetBudgets(u.budgets)
		copy(u.budgets, u.levels)
		n.SetFullAt(u.fullAt)
	}
	if u.lease != nil {
		u.lease.Cost = u.cost
	}
	if u.tenant != nil {
		u.tenant.Refund(u.spent, u.spentAt)
	}
	s.Recount(n, back)
	s.restoreRest(n, u.restUntil, u.rest)
	switch {
	case u.state == node.Active && n.Index < 0:
		s.Heap.Return(n)
	case u.state != node.Active && n.Index >= 0:
		s.Heap.Delete(int(n.Index))
	}
	if n.State != u.state {
		s.SetState(n, u.state)
	}
	if u.what&SavingInsert != 0 {
		s.nodes.Delete(n.Key)
	}
	s.Publish()
}
