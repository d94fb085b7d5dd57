// A program outside the repository that uses the root module as users do.
package main

import (
	"fmt"
	"log"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

type worker struct {
	id       string
	priority int
}

func main() {
	sched, err := scheduler.New(config.Config[*worker, string]{
		Comparator: func(a, b *worker) int { return a.priority - b.priority },
		KeyFunc:    func(w *worker) string { return w.id },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sched.Shutdown()
	if err := sched.Add(&worker{id: "w1", priority: 1}); err != nil {
		log.Fatal(err)
	}
	w, err := sched.Acquire()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.id)
}
