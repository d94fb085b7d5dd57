// Command affinity keeps each user on the same upstream with
// AcquireByAffinity, for cache locality or conversation context. The
// user's identifier maps to one resource, whatever the priorities do;
// only when that resource is unavailable does the user move, to the next
// resource in an order fixed by the identifier.
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

	users := []string{"alice", "bob", "carol", "dave"}
	home := map[string]string{}
	for _, user := range users {
		var got []string
		for range 3 {
			u, err := sched.AcquireByAffinity(acquire.StringIdentifier(user))
			if err != nil {
				return err
			}
			got = append(got, u.Name)
		}
		home[user] = got[0]
		fmt.Fprintf(w, "%-5s -> %s\n", user, strings.Join(got, ", "))
	}

	// Every upstream's score changes: the users stay where they were.
	for i, u := range pool {
		if err := sched.Update(&upstream{Name: u.Name, Score: 100 - i}); err != nil {
			return err
		}
	}
	stayed := 0
	for _, user := range users {
		u, err := sched.AcquireByAffinity(acquire.StringIdentifier(user))
		if err != nil {
			return err
		}
		if u.Name == home[user] {
			stayed++
		}
	}
	fmt.Fprintf(w, "after every score changed, %d of %d users kept their upstream\n", stayed, len(users))

	// alice's upstream goes away for a while: she moves, and back again.
	if err := sched.Exclude(home["alice"]); err != nil {
		return err
	}
	moved, err := sched.AcquireByAffinity(acquire.StringIdentifier("alice"))
	if err != nil {
		return err
	}
	if err := sched.Include(home["alice"]); err != nil {
		return err
	}
	back, err := sched.AcquireByAffinity(acquire.StringIdentifier("alice"))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "alice while %s is excluded -> %s; after -> %s\n", home["alice"], moved.Name, back.Name)

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
