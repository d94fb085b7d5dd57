// Command exclusive schedules jobs on GPUs under the Exclusive policy: a
// GPU runs one job at a time, so Acquire takes it out of the pool and only
// Release puts it back. When every GPU is busy, Acquire says so at once
// instead of handing a GPU to two jobs.
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

type gpu struct {
	NodeID     string
	FreeVRAMGB int // more is better
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	sched, err := scheduler.New(config.Config[*gpu, string]{
		HeapCount:     1,
		Comparator:    func(a, b *gpu) int { return cmp.Compare(b.FreeVRAMGB, a.FreeVRAMGB) },
		KeyFunc:       func(g *gpu) string { return g.NodeID },
		AcquirePolicy: config.Exclusive,
	})
	if err != nil {
		return err
	}
	defer sched.Shutdown()

	if err := sched.BatchAdd([]*gpu{
		{NodeID: "gpu-a", FreeVRAMGB: 24},
		{NodeID: "gpu-b", FreeVRAMGB: 80},
	}); err != nil {
		return err
	}

	for range sched.Len() {
		g, err := sched.Acquire()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "job placed on %s (%d GB free)\n", g.NodeID, g.FreeVRAMGB)
	}

	_, err = sched.Acquire()
	if !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		return fmt.Errorf("acquire with every GPU busy: got %v, want ErrNoResourceAvailable", err)
	}
	st := sched.Stats()
	fmt.Fprintf(w, "next job: no GPU available (%d held, %d acquirable)\n", st.HeldResources, st.ActiveResources)

	if err := sched.Release("gpu-b"); err != nil {
		return err
	}
	fmt.Fprintln(w, "gpu-b finished its job and was released")

	g, err := sched.Acquire()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "next job placed on %s\n", g.NodeID)
	return nil
}
