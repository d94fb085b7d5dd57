// Command affinity keeps each user on the same upstream with
// AcquireByAffinity, for cache locality or conversation context. The
// user's identifier picks a shard through a consistent hash ring, and the
// shard's best resource answers, so a user sticks to one upstream for as
// long as the priorities in that shard do not change.
package main

import (
	"cmp"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

type upstream struct {
	Name  string
	Score int // lower is better
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	sched, err := scheduler.New(config.Config[*upstream, string]{
		HeapCount:  4,
		Comparator: func(a, b *upstream) int { return cmp.Compare(a.Score, b.Score) },
		KeyFunc:    func(u *upstream) string { return u.Name },
	})
	if err != nil {
		return err
	}
	defer sched.Shutdown()

	pool := make([]*upstream, 8)
	for i := range pool {
		pool[i] = &upstream{Name: fmt.Sprintf("upstream-%d", i+1), Score: i + 1}
	}
	if err := sched.BatchAdd(pool); err != nil {
		return err
	}

	for _, user := range []string{"alice", "bob", "carol", "dave"} {
		var got []string
		for range 3 {
			u, err := sched.AcquireByAffinity(acquire.StringIdentifier(user))
			if err != nil {
				return err
			}
			got = append(got, u.Name)
		}
		fmt.Fprintf(w, "%-5s -> %s\n", user, strings.Join(got, ", "))
	}

	// Plain Acquire, for contrast, rotates over the shards (round robin).
	var rotation []string
	for range 4 {
		u, err := sched.Acquire()
		if err != nil {
			return err
		}
		rotation = append(rotation, u.Name)
	}
	fmt.Fprintf(w, "Acquire without affinity -> %s\n", strings.Join(rotation, ", "))
	return nil
}
