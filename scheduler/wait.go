package scheduler

import (
	"context"

	"github.com/crsched/crs/acquire"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// AcquireContext is Acquire that waits instead of failing when no resource
// is available: until one is released, included or added (it is handed to
// waiters in the order they started waiting), until ctx ends (it returns
// ctx.Err(), wrapped, unless a resource was handed to it at that instant,
// which it returns), or until Shutdown (ErrSchedulerClosed). Under the
// Shared policy it waits only while no resource is active. A resource
// acquired this way under the Exclusive policy is returned with Release.
func (s *Scheduler[T, ID]) AcquireContext(ctx context.Context) (T, error) {
	g := waiting.Grant[T, ID]{Tenant: s.defTenant}
	start, err := s.begin(nil)
	if err == nil {
		err = s.request(ctx, start, nil, false, &g)
	}
	return g.Value, err
}

// AcquireByAffinityContext is AcquireByAffinity that waits like
// AcquireContext. A caller that has to wait takes whichever resource comes
// free first.
func (s *Scheduler[T, ID]) AcquireByAffinityContext(ctx context.Context, id acquire.AffinityIdentifier) (T, error) {
	g := waiting.Grant[T, ID]{Tenant: s.defTenant}
	if id == nil {
		return g.Value, crserrors.ErrNilAffinityIdentifier
	}
	start, err := s.begin(id)
	if err == nil {
		err = s.request(ctx, start, id, false, &g)
	}
	return g.Value, err
}

// host is the scheduler seen by its waiting room (waiting.Host). It is
// a conversion of the scheduler pointer, so that the room's calls need
// no closures and the scheduler's method set stays its public API.
type host[T any, ID comparable] Scheduler[T, ID]

func (h *host[T, ID]) Now() int64 { return (*Scheduler[T, ID])(h).now() }

func (h *host[T, ID]) LeaseDue(n *node.Node[T, ID], token uint64, deadline int64) {
	h.deadlines.Schedule(deadline, leaseEnd(n, token))
}

func (h *host[T, ID]) Report(n *node.Node[T, ID], c shard.Change) {
	(*Scheduler[T, ID])(h).report(n, c)
}

func (h *host[T, ID]) Acquired(n *node.Node[T, ID]) { (*Scheduler[T, ID])(h).acquired(n) }

func (h *host[T, ID]) Wake(i int, at int64) { h.deadlines.Schedule(at, wake[T, ID](i)) }

func (h *host[T, ID]) Search(start int, id acquire.AffinityIdentifier, lease bool, ask waiting.Grant[T, ID]) (waiting.Grant[T, ID], bool) {
	g := ask
	found := h.search.Search(start, id, lease, &g)
	if found {
		(*Scheduler[T, ID])(h).acquired(g.Node)
	}
	return g, found
}
