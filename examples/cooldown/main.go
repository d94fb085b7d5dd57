// Command cooldown rests each API key for a while after use with the
// extensions/cooldown Manager: after Release the key is excluded from the
// pool, and included again once the cooldown has passed.
//
// The Manager reacts to release events, which are asynchronous, so a key
// can be handed out again in the moment between Release and its exclusion
// (see the cooldown package documentation). This program waits for the
// controller to report each step, so its output does not depend on
// timing.
package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/cooldown"
	"github.com/crsched/crs/scheduler"
)

const restPeriod = 100 * time.Millisecond

type apiKey struct {
	ID             string
	RemainingQuota int // more is better
}

type keyScheduler = scheduler.Scheduler[*apiKey, string]

// keyController is what the Manager drives. The Manager goes into the
// scheduler's Config, so it must exist before scheduler.New, yet it needs
// the scheduler to exclude and include keys: the controller is created
// first, handed to the Manager, and gets its scheduler right after New.
//
// It also reports each transition with the pool size at that moment; a
// real program might log them instead.
type keyController struct {
	sched   *keyScheduler
	reports chan string
}

func (c *keyController) Exclude(id string) error {
	if err := c.sched.Exclude(id); err != nil {
		return err
	}
	c.reports <- fmt.Sprintf("cooldown started: excluded %s, %s", id, acquirable(c.sched))
	return nil
}

func (c *keyController) Include(id string) error {
	if err := c.sched.Include(id); err != nil {
		return err
	}
	c.reports <- fmt.Sprintf("cooldown ended: included %s, %s", id, acquirable(c.sched))
	return nil
}

func acquirable(s *keyScheduler) string {
	st := s.Stats()
	return fmt.Sprintf("%d of %d keys acquirable", st.ActiveResources, st.TotalResources)
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	ctrl := &keyController{reports: make(chan string, 4)}
	cool := cooldown.NewManager[string](ctrl, restPeriod)
	defer cool.Close()

	sched, err := scheduler.New(config.Config[*apiKey, string]{
		Comparator:    func(a, b *apiKey) int { return cmp.Compare(b.RemainingQuota, a.RemainingQuota) },
		KeyFunc:       func(k *apiKey) string { return k.ID },
		AcquirePolicy: config.Exclusive,
		Observers:     []events.Observer[string]{cool},
	})
	if err != nil {
		return err
	}
	defer sched.Shutdown()
	ctrl.sched = sched // before the first Release, hence before the Manager's first call

	if err := sched.BatchAdd([]*apiKey{
		{ID: "key-1", RemainingQuota: 900},
		{ID: "key-2", RemainingQuota: 500},
	}); err != nil {
		return err
	}

	key, err := sched.Acquire()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "acquired %s (quota %d)\n", key.ID, key.RemainingQuota)
	releasedAt := time.Now()
	if err := sched.Release(key.ID); err != nil {
		return err
	}
	fmt.Fprintf(w, "released %s\n", key.ID)

	for range 2 { // the exclusion, then the inclusion
		report, err := nextReport(ctrl.reports)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, report)
	}
	if rested := time.Since(releasedAt); rested < restPeriod {
		return fmt.Errorf("%s back after %v, before its %v cooldown", key.ID, rested, restPeriod)
	}
	fmt.Fprintf(w, "%s rested at least %v\n", key.ID, restPeriod)

	again, err := sched.Acquire()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "acquired %s (quota %d)\n", again.ID, again.RemainingQuota)
	return nil
}

func nextReport(reports <-chan string) (string, error) {
	select {
	case r := <-reports:
		return r, nil
	case <-time.After(2 * time.Second):
		return "", errors.New("no cooldown transition within 2s")
	}
}
