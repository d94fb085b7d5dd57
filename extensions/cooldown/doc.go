// Package cooldown keeps a resource out of the pool for a while after it
// is released, for resources that need rest between uses: an API key just
// rate-limited, a proxy that should not be hit back to back.
//
// A Manager is an events.Observer. On every events.EventRelease it calls
// Exclude on its LifecycleController and, if that succeeds, arms a timer
// that calls Include after the cooldown duration. The controller is
// normally the scheduler itself, reached through a small wrapper (see
// below).
//
// # Cooldowns are best effort
//
// The Manager learns of a release from an event, and events are
// asynchronous: Release returns, the resource is back in the pool, and
// only later does the dispatcher goroutine deliver the event and the
// Manager exclude the resource. In that window another caller can acquire
// it. Then Exclude fails (the resource is held again) and no cooldown
// starts for that release; the next Release of the resource starts one.
// Worse, the scheduler drops events when its queue is full
// (stats.Stats.DroppedEvents), so under load a release may never start a
// cooldown at all.
//
// This matches the extension of the original library, and is kept so that
// code written for it keeps working. New code should use the core's exact
// cooldowns instead: config.Config.ReleaseCooldown rests every released
// resource, Lease.Cooldown rests one for a given time (a 429's
// retry-after), and Scheduler.Suspend rests any resource; each takes the
// resource out of the pool in the same step as the release, needs no
// observer, and cannot be dropped.
//
// # Wiring: the initialization cycle
//
// The scheduler takes its observers in its Config, so the Manager must
// exist before scheduler.New; but the Manager needs a controller, which is
// the scheduler. Break the cycle with a wrapper whose scheduler pointer is
// filled in after New:
//
//	// schedulerController lets the Manager be built before the scheduler
//	// it controls.
//	type schedulerController struct {
//		sched *scheduler.Scheduler[*APIKey, string]
//	}
//
//	func (c *schedulerController) Exclude(id string) error { return c.sched.Exclude(id) }
//	func (c *schedulerController) Include(id string) error { return c.sched.Include(id) }
//
//	ctrl := &schedulerController{}
//	cool := cooldown.NewManager[string](ctrl, 30*time.Second)
//	defer cool.Close()
//	sched, err := scheduler.New(config.Config[*APIKey, string]{
//		Comparator:    byRemainingQuota,
//		KeyFunc:       func(k *APIKey) string { return k.ID },
//		AcquirePolicy: config.Exclusive,
//		Observers:     []events.Observer[string]{cool},
//	})
//	if err != nil {
//		return err
//	}
//	defer sched.Shutdown()
//	ctrl.sched = sched
//
// Setting ctrl.sched right after New, before any Release, is enough: the
// Manager only calls the controller in response to a release event, and
// the event is sent after the assignment. examples/cooldown is a complete
// program.
package cooldown
