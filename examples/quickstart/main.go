package main

import (
	"fmt"
	"log"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

type Worker struct {
	ID       string
	Priority int
}

func main() {
	sched, err := scheduler.New(config.Config[*Worker, string]{
		Comparator: func(a, b *Worker) int { // negative: a is handed out first
			return a.Priority - b.Priority
		},
		KeyFunc:       func(w *Worker) string { return w.ID },
		AcquirePolicy: config.Exclusive, // one holder at a time, until Release
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sched.Shutdown()

	for _, w := range []*Worker{{ID: "worker-1", Priority: 50}, {ID: "worker-2", Priority: 10}} {
		if err := sched.Add(w); err != nil {
			log.Fatal(err)
		}
	}

	res, err := sched.Acquire()
	if err != nil {
		log.Fatal(err) // errors.ErrNoResourceAvailable when every worker is taken
	}
	fmt.Println("Acquired:", res.ID) // Acquired: worker-2
	if err := sched.Release(res.ID); err != nil {
		log.Fatal(err)
	}
}
