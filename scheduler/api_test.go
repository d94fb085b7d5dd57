package scheduler_test

import (
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/cooldown"
	"github.com/crsched/crs/extensions/metrics"
	"github.com/crsched/crs/scheduler"
	"github.com/crsched/crs/stats"
)

// The CRS v1.2.3 API, pinned: code written against the seed's README must
// keep compiling. Each line fails to build if a name or signature changes.
var sched *scheduler.Scheduler[*worker, string]

var (
	_ func(config.Config[*worker, string]) (*scheduler.Scheduler[*worker, string], error) = scheduler.New[*worker, string]

	_ func(*worker) error                                                                 = sched.Add
	_ func([]*worker) error                                                               = sched.BatchAdd
	_ func() (*worker, error)                                                             = sched.Acquire
	_ func(acquire.AffinityIdentifier) (*worker, error)                                   = sched.AcquireByAffinity
	_ func(string) error                                                                  = sched.Release
	_ func(*worker) error                                                                 = sched.Update
	_ func(string) error                                                                  = sched.Exclude
	_ func(string) error                                                                  = sched.Include
	_ func(string) error                                                                  = sched.Remove
	_ func(string) (*worker, error)                                                       = sched.Get
	_ func() int                                                                          = sched.Len
	_ func() stats.Stats                                                                  = sched.Stats
	_ func()                                                                              = sched.Shutdown
	_ cooldown.LifecycleController[string]                                                = sched
	_ func(config.Config[*worker, string]) (config.Config[*worker, string], error)        = config.Validate[*worker, string]
	_ func() acquire.AcquireStrategy                                                      = acquire.NewRoundRobin
	_ func([]uint) *acquire.WeightedStrategy                                              = acquire.NewWeightedStrategy
	_ func() *acquire.AdaptiveStrategy                                                    = acquire.NewAdaptiveStrategy
	_ func(int) *acquire.ConsistentHashRing                                               = acquire.NewConsistentHashRing
	_ func(*acquire.ConsistentHashRing, uint64) int                                       = (*acquire.ConsistentHashRing).GetShard
	_ acquire.AcquireStrategy                                                             = (*acquire.WeightedStrategy)(nil)
	_ acquire.AcquireStrategy                                                             = (*acquire.AdaptiveStrategy)(nil)
	_ func() *metrics.TelemetryObserver[string]                                           = metrics.NewTelemetryObserver[string]
	_ events.Observer[string]                                                             = (*metrics.TelemetryObserver[string])(nil)
	_ events.Observer[string]                                                             = (*cooldown.Manager[string])(nil)
	_ func(cooldown.LifecycleController[string], time.Duration) *cooldown.Manager[string] = cooldown.NewManager[string]

	_ = config.Config[*worker, string]{
		HeapCount:       config.DefaultHeapCount,
		Comparator:      config.Comparator[*worker](byPriority),
		KeyFunc:         config.KeyFunc[*worker, string](workerID),
		AcquirePolicy:   config.Exclusive,
		AcquireStrategy: acquire.NewRoundRobin(),
		Observers:       []events.Observer[string]{metrics.NewTelemetryObserver[string]()},
	}
	_ = events.Event[string]{Type: events.EventAdd, ID: "k"}
	_ = []events.EventType{events.EventAdd, events.EventAcquire, events.EventRelease,
		events.EventExclude, events.EventInclude, events.EventRemove, events.EventUpdate}
	_ = stats.Stats{HeapCount: 1, TotalResources: 1, ActiveResources: 1, InactiveResources: 0,
		EmptyHeaps: 0, NonEmptyHeaps: 1, AcquirePolicy: "Shared", AcquireStrategy: "RoundRobin", HeapSizes: []int{1}}
	_ = metrics.TelemetryStats{AddCount: 1, AcquireCount: 1, ReleaseCount: 1, ExcludeCount: 1,
		IncludeCount: 1, RemoveCount: 1, UpdateCount: 1}
	_ = []error{crserrors.ErrInvalidHeapCount, crserrors.ErrNilComparator, crserrors.ErrNilKeyFunc,
		crserrors.ErrInvalidAcquirePolicy, crserrors.ErrInvalidAcquireStrategy, crserrors.ErrNilResource,
		crserrors.ErrDuplicateKey, crserrors.ErrResourceNotFound, crserrors.ErrNotExclusive,
		crserrors.ErrResourceNotInactive, crserrors.ErrResourceNotActive, crserrors.ErrNoResourceAvailable,
		crserrors.ErrSchedulerClosed, crserrors.ErrNilAffinityIdentifier}
)
