// Command shared routes queries to read replicas under the Shared policy:
// a replica serves many callers at once, so Acquire only looks at the best
// one and leaves it in the pool. What changes the answer is Update, as the
// replicas' load changes.
package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

type replica struct {
	Endpoint    string
	ActiveConns int // fewer is better
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	sched, err := scheduler.New(config.Config[*replica, string]{
		// One shard, so the best replica is the best of the whole pool;
		// with several, each Acquire gets the best of the shard the
		// strategy picks.
		HeapCount:     1,
		Comparator:    func(a, b *replica) int { return cmp.Compare(a.ActiveConns, b.ActiveConns) },
		KeyFunc:       func(r *replica) string { return r.Endpoint },
		AcquirePolicy: config.Shared,
	})
	if err != nil {
		return err
	}
	defer sched.Shutdown()

	if err := sched.BatchAdd([]*replica{
		{Endpoint: "db-replica-a", ActiveConns: 12},
		{Endpoint: "db-replica-b", ActiveConns: 3},
		{Endpoint: "db-replica-c", ActiveConns: 7},
	}); err != nil {
		return err
	}

	for i := 1; i <= 3; i++ {
		r, err := sched.Acquire()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "acquire %d: %s (%d conns)\n", i, r.Endpoint, r.ActiveConns)
	}
	st := sched.Stats()
	fmt.Fprintf(w, "still acquirable: %d of %d replicas, %d held\n", st.ActiveResources, st.TotalResources, st.HeldResources)

	// Nothing was taken out, so there is nothing to give back.
	if err := sched.Release("db-replica-b"); !errors.Is(err, crserrors.ErrNotExclusive) {
		return fmt.Errorf("release under Shared: got %v, want ErrNotExclusive", err)
	}
	fmt.Fprintln(w, "Release under the shared policy: not needed (ErrNotExclusive)")

	// Report the replica's new load; the order follows.
	if err := sched.Update(&replica{Endpoint: "db-replica-b", ActiveConns: 20}); err != nil {
		return err
	}
	r, err := sched.Acquire()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "after db-replica-b reports 20 conns: acquire returns %s (%d conns)\n", r.Endpoint, r.ActiveConns)
	return nil
}
