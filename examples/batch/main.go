// Command batch provisions a pool with BatchAdd, which inserts all of a
// batch or none of it: a batch with a duplicate key leaves the pool as it
// was, so a failed provisioning step never leaves a half-filled pool.
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

type proxy struct {
	Addr      string
	LatencyMS int // lower is better
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	sched, err := scheduler.New(config.Config[*proxy, string]{
		HeapCount:  4,
		Comparator: func(a, b *proxy) int { return cmp.Compare(a.LatencyMS, b.LatencyMS) },
		KeyFunc:    func(p *proxy) string { return p.Addr },
	})
	if err != nil {
		return err
	}
	defer sched.Shutdown()

	fmt.Fprintf(w, "Len before: %d\n", sched.Len())
	initial := []*proxy{
		{Addr: "10.0.0.1:8080", LatencyMS: 40},
		{Addr: "10.0.0.2:8080", LatencyMS: 25},
		{Addr: "10.0.0.3:8080", LatencyMS: 60},
	}
	if err := sched.BatchAdd(initial); err != nil {
		return err
	}
	fmt.Fprintf(w, "BatchAdd of 3 proxies: ok, Len %d\n", sched.Len())

	// 10.0.0.4 is new but 10.0.0.2 is already in the pool: nothing goes in.
	clash := []*proxy{
		{Addr: "10.0.0.4:8080", LatencyMS: 10},
		{Addr: "10.0.0.2:8080", LatencyMS: 30},
	}
	err = sched.BatchAdd(clash)
	if !errors.Is(err, crserrors.ErrDuplicateKey) {
		return fmt.Errorf("batch with an existing key: got %v, want ErrDuplicateKey", err)
	}
	fmt.Fprintf(w, "BatchAdd with an existing key: rejected (duplicate key), Len %d\n", sched.Len())

	// A key repeated inside one batch is rejected the same way.
	repeated := []*proxy{
		{Addr: "10.0.0.5:8080", LatencyMS: 15},
		{Addr: "10.0.0.5:8080", LatencyMS: 15},
	}
	if err := sched.BatchAdd(repeated); !errors.Is(err, crserrors.ErrDuplicateKey) {
		return fmt.Errorf("batch with a repeated key: got %v, want ErrDuplicateKey", err)
	}
	fmt.Fprintf(w, "BatchAdd with a key repeated in the batch: rejected (duplicate key), Len %d\n", sched.Len())

	// The new proxy of the rejected batch did not slip in.
	if _, err := sched.Get("10.0.0.4:8080"); !errors.Is(err, crserrors.ErrResourceNotFound) {
		return fmt.Errorf("get of a proxy from a rejected batch: got %v, want ErrResourceNotFound", err)
	}
	fmt.Fprintln(w, "10.0.0.4:8080 from the rejected batch: not in the pool")
	return nil
}
