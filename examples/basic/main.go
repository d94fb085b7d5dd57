// Command basic is the quick start: a scheduler with two workers hands
// out the one with the better priority.
package main

import (
	"cmp"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

type worker struct {
	ID       string
	Priority int // smaller is better
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	sched, err := scheduler.New(config.Config[*worker, string]{
		HeapCount:  1,
		Comparator: func(a, b *worker) int { return cmp.Compare(a.Priority, b.Priority) },
		KeyFunc:    func(w *worker) string { return w.ID },
	})
	if err != nil {
		return err
	}
	defer sched.Shutdown()

	for _, wk := range []*worker{{ID: "worker-1", Priority: 50}, {ID: "worker-2", Priority: 10}} {
		if err := sched.Add(wk); err != nil {
			return err
		}
	}

	best, err := sched.Acquire()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "acquired %s (priority %d)\n", best.ID, best.Priority)
	// The default policy is Shared: the worker stays in the pool.
	st := sched.Stats()
	fmt.Fprintf(w, "policy %s: %d of %d workers still acquirable\n", st.AcquirePolicy, st.ActiveResources, sched.Len())
	return nil
}
