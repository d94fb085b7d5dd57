// Command apikeys rotates LLM provider API keys through a scheduler: the
// key with the most quota first, each key's requests and tokens per
// minute kept exactly (a call takes its estimated tokens and settles to
// what the provider reported), a 429 rests the key until its
// retry-after, and repeated failures eject it. Requests wait for a key
// instead of failing.
package main

import (
	"cmp"
	"context"
	"errors"
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
	Remaining int   // quota left: more is better
	RPM, TPM  int64 // the provider's requests and tokens per minute
}

func newPool() (*scheduler.Scheduler[*apiKey, string], error) {
	return scheduler.New(config.Config[*apiKey, string]{
		Comparator:    func(a, b *apiKey) int { return cmp.Compare(b.Remaining, a.Remaining) },
		KeyFunc:       func(k *apiKey) string { return k.ID },
		AcquirePolicy: config.Shared, // leases count calls in flight; the limits meter them
		Limits: func(k *apiKey) []config.Limit {
			return []config.Limit{
				{Name: "requests", Max: k.RPM, Per: time.Minute},
				{Name: "tokens", Max: k.TPM, Per: time.Minute},
			}
		},
		Ejection: config.Ejection{ConsecutiveFailures: 2, BaseTime: time.Minute},
	})
}

// complete makes one call on the best key whose budgets cover its
// estimate, waiting for one if none does.
func complete(ctx context.Context, pool *scheduler.Scheduler[*apiKey, string], prompt string, maxTokens int64) (string, error) {
	estimate := int64(len(prompt))/4 + maxTokens // the most the call can spend
	lease, err := pool.Lease(ctx, scheduler.WithCost(config.Cost{"tokens": estimate}))
	if err != nil {
		return "", err
	}
	answer, used := callProvider(lease.Value(), prompt, maxTokens)
	// What the provider reported: the unused part of the estimate comes back.
	settled := lease.Settle(config.Cost{"tokens": used})
	return answer, errors.Join(settled, lease.Release())
}

// callProvider stands for the HTTP call: it answers with the key's name
// and the tokens the call used, as a provider's usage block reports them.
func callProvider(k *apiKey, prompt string, maxTokens int64) (string, int64) {
	return "answered with " + k.ID, int64(len(prompt))/4 + maxTokens/4
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
	pool, err := newPool()
	if err != nil {
		return err
	}
	defer pool.Shutdown()
	if err := pool.BatchAdd([]*apiKey{
		{ID: "openai-1", Remaining: 900, RPM: 500, TPM: 40000},
		{ID: "groq-1", Remaining: 500, RPM: 500, TPM: 40000},
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// 1. A call on the best key, settled to the tokens it used.
	answer, err := complete(ctx, pool, "Say hello in French.", 200)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, answer)

	// 2. The best key answers 429: it rests until its retry-after.
	l, err := pool.Lease(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: 429, resting %v\n", l.Key(), retryAfter)
	if err := l.Cooldown(retryAfter); err != nil {
		return err
	}

	// 3. The next key fails twice in a row: it is ejected for a minute.
	for i := 0; i < 2; i++ {
		if l, err = pool.Lease(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: upstream error\n", l.Key())
		if err := l.Fail(); err != nil {
			return err
		}
	}

	// 4. No key is available now: the call waits for the 429'd key.
	st := pool.Stats()
	fmt.Fprintf(out, "available now: %d (suspended %d, ejected %d); waiting...\n",
		st.ActiveResources, st.SuspendedResources, st.EjectedResources)
	if answer, err = complete(ctx, pool, "And in German?", 200); err != nil {
		return err
	}
	fmt.Fprintln(out, answer, "after its retry-after")

	// 5. Its quota went down: the scheduler re-orders it.
	return pool.Update(&apiKey{ID: "openai-1", Remaining: 899, RPM: 500, TPM: 40000})
}
