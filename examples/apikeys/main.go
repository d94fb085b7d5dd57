// Command apikeys rotates LLM provider API keys through a scheduler: the
// key with the most quota first, a 429 rests the key until its
// retry-after, repeated failures eject it, and no key goes faster than its
// requests-per-minute. Requests wait for a key instead of failing.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

type apiKey struct {
	ID        string
	Remaining int // quota left: more is better
	RPM       int
}

// retryAfter is what the simulated provider asks for after a 429; short,
// so the program shows the key coming back.
const retryAfter = 150 * time.Millisecond

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(out io.Writer) error {
	sched, err := scheduler.New(config.Config[*apiKey, string]{
		Comparator:    func(a, b *apiKey) int { return cmp.Compare(b.Remaining, a.Remaining) },
		KeyFunc:       func(k *apiKey) string { return k.ID },
		AcquirePolicy: config.Exclusive,
		RateLimit:     func(k *apiKey) (float64, int) { return float64(k.RPM) / 60, max(1, k.RPM/60) },
		Ejection:      config.Ejection{ConsecutiveFailures: 2, BaseTime: time.Minute},
	})
	if err != nil {
		return err
	}
	defer sched.Shutdown()
	if err := sched.BatchAdd([]*apiKey{
		{ID: "openai-1", Remaining: 900, RPM: 6000},
		{ID: "groq-1", Remaining: 500, RPM: 6000},
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// 1. The best key answers 429: it rests until its retry-after.
	l, err := sched.Lease(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: 429, resting %v\n", l.Key(), retryAfter)
	if err := l.Cooldown(retryAfter); err != nil {
		return err
	}

	// 2. The next key fails twice in a row: it is ejected for a minute.
	for i := 0; i < 2; i++ {
		if l, err = sched.Lease(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: upstream error\n", l.Key())
		if err := l.Fail(); err != nil {
			return err
		}
	}

	// 3. No key is available now: the request waits for the 429'd key.
	st := sched.Stats()
	fmt.Fprintf(out, "available now: %d (suspended %d, ejected %d); waiting...\n",
		st.ActiveResources, st.SuspendedResources, st.EjectedResources)
	if l, err = sched.Lease(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: back after its retry-after, served the request\n", l.Key())

	// 4. Its quota went down: the scheduler re-orders it.
	if err := sched.Update(&apiKey{ID: l.Key(), Remaining: 899, RPM: 6000}); err != nil {
		return err
	}
	return l.Release()
}
