package cooldown_test

import (
	"fmt"
	"log"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/cooldown"
	"github.com/crsched/crs/scheduler"
)

type apiKey struct {
	ID             string
	RemainingQuota int
}

// keyController is the wrapper that breaks the initialization cycle: it
// exists before the scheduler, and its sched field is set after
// scheduler.New. It also reports each transition, which is how this
// example knows when the cooldown has started and ended.
type keyController struct {
	sched   *scheduler.Scheduler[*apiKey, string]
	reports chan string
}

func (c *keyController) Exclude(id string) error {
	err := c.sched.Exclude(id)
	c.reports <- "exclude " + id + ": " + outcome(err)
	return err
}

func (c *keyController) Include(id string) error {
	err := c.sched.Include(id)
	c.reports <- "include " + id + ": " + outcome(err)
	return err
}

func outcome(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

func ExampleNewManager() {
	ctrl := &keyController{reports: make(chan string, 4)}
	cool := cooldown.NewManager[string](ctrl, 10*time.Millisecond)
	defer cool.Close()

	sched, err := scheduler.New(config.Config[*apiKey, string]{
		Comparator:    func(a, b *apiKey) int { return b.RemainingQuota - a.RemainingQuota },
		KeyFunc:       func(k *apiKey) string { return k.ID },
		AcquirePolicy: config.Exclusive,
		Observers:     []events.Observer[string]{cool},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sched.Shutdown()
	ctrl.sched = sched // before the first Release

	if err := sched.Add(&apiKey{ID: "key-1", RemainingQuota: 100}); err != nil {
		log.Fatal(err)
	}
	key, err := sched.Acquire()
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Release(key.ID); err != nil {
		log.Fatal(err)
	}
	for range 2 { // the exclusion, then the inclusion 10ms later
		select {
		case report := <-ctrl.reports:
			fmt.Println(report)
		case <-time.After(5 * time.Second):
			log.Fatal("cooldown did not finish")
		}
	}
	// Output:
	// exclude key-1: ok
	// include key-1: ok
}
