package scheduler

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/dispatch"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
)

// Scheduler hands out resources of type T, identified by keys of type ID,
// best first by the configured comparator. All methods are safe for
// concurrent use.
//
// Lock order: a shard lock, then the lookup map's lock. No method holds two
// shard locks, except BatchAdd, which takes the shards it touches in
// ascending index order. No user code (comparator aside, see below) runs
// under a lock; the comparator runs under the lock of the shard it orders,
// and a panic in it unwinds through deferred unlocks and undoes the
// operation (see shard).
type Scheduler[T any, ID comparable] struct {
	cmp      func(a, b T) int
	key      func(T) ID
	nillable bool // T's kind has a nil value that Add must reject
	policy   config.AcquirePolicy
	strategy acquire.AcquireStrategy
	view     acquire.ShardView
	// ring routes AcquireByAffinity. It is built on first use: at 500
	// points per shard it is large, and many schedulers never need it.
	ring     *acquire.ConsistentHashRing
	ringOnce sync.Once

	shards []shard[T, ID]
	nodes  *lookup.Map[ID, *node.Node[T, ID]]
	// placed spreads new resources over the shards in rotation.
	placed atomic.Uint64

	events *dispatch.Dispatcher[ID] // nil when there are no observers
	closed atomic.Bool
}

// New validates cfg and returns a running scheduler. Call Shutdown when
// done with it to stop its event dispatcher.
func New[T any, ID comparable](cfg config.Config[T, ID]) (*Scheduler[T, ID], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	heapCount := cfg.HeapCount
	if heapCount == 0 {
		heapCount = config.DefaultHeapCount
	}
	s := &Scheduler[T, ID]{
		cmp:      cfg.Comparator,
		key:      cfg.KeyFunc,
		nillable: isNillable[T](),
		policy:   cfg.AcquirePolicy,
		strategy: cfg.AcquireStrategy,
		shards:   make([]shard[T, ID], heapCount),
		nodes:    lookup.New[ID, *node.Node[T, ID]](),
	}
	if s.strategy == nil {
		s.strategy = acquire.NewRoundRobin()
	}
	for i := range s.shards {
		s.shards[i] = newShard[T, ID](s.cmp)
	}
	s.view = (*shardView[T, ID])(s)
	if len(cfg.Observers) > 0 {
		size := cfg.EventQueueSize
		if size == 0 {
			size = config.DefaultEventQueueSize
		}
		s.events = dispatch.Start(size, cfg.Observers)
	}
	return s, nil
}

// Shutdown closes the scheduler: every later call returns
// ErrSchedulerClosed. It delivers the events already queued, stops the
// dispatcher and returns once it has exited. It is idempotent and safe to
// call concurrently, but not from an observer.
func (s *Scheduler[T, ID]) Shutdown() {
	s.closed.Store(true)
	if s.events != nil {
		s.events.Stop()
	}
}

// Len is the number of resources in the scheduler, whatever their state.
func (s *Scheduler[T, ID]) Len() int { return s.nodes.Len() }

// Get returns the current value of the resource with key id, whatever its
// state.
func (s *Scheduler[T, ID]) Get(id ID) (T, error) {
	var zero T
	if s.closed.Load() {
		return zero, crserrors.ErrSchedulerClosed
	}
	n, sh := s.find(id)
	if n == nil {
		return zero, notFound("get", id)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if n.State == node.Removed {
		return zero, notFound("get", id)
	}
	return n.Value, nil
}

// find returns the node for id and its shard, or nil. The caller must lock
// the shard and check that the node was not removed in between.
func (s *Scheduler[T, ID]) find(id ID) (*node.Node[T, ID], *shard[T, ID]) {
	n, ok := s.nodes.Get(id)
	if !ok {
		return nil, nil
	}
	return n, &s.shards[n.Shard]
}

func (s *Scheduler[T, ID]) emit(t events.EventType, id ID) {
	if s.events != nil {
		s.events.Emit(events.Event[ID]{Type: t, ID: id})
	}
}

func (s *Scheduler[T, ID]) isNil(v T) bool {
	if !s.nillable {
		return false
	}
	rv := reflect.ValueOf(any(v))
	return !rv.IsValid() || rv.IsNil()
}

// isNillable reports whether values of T can be nil, so that Add can
// reject them. Checked once, at New, to keep reflection off other types.
func isNillable[T any]() bool {
	switch reflect.TypeOf((*T)(nil)).Elem().Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice,
		reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return true
	}
	return false
}

func notFound[ID comparable](op string, id ID) error {
	return fmt.Errorf("%s %v: %w", op, id, crserrors.ErrResourceNotFound)
}

func opError[ID comparable](op string, id ID, err error) error {
	return fmt.Errorf("%s %v: %w", op, id, err)
}
