package redispool_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/redispool"
)

// Every replica of a service runs this; they share one pool of keys.
// (Not run by go test: it needs a Redis at 127.0.0.1:6379.)
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	pool, err := redispool.New(client, redispool.Options{Name: "llm-keys", LeaseTTL: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// Each replica adds the configured keys; the first one wins.
	for i, key := range []string{"key-a", "key-b"} {
		err := pool.Add(ctx, redispool.Resource{ID: key, Priority: float64(i), Capacity: 4})
		if err != nil && !errors.Is(err, crserrors.ErrDuplicateKey) {
			log.Fatal(err)
		}
	}

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, err := pool.Acquire(wctx) // waits for a free slot, in any replica
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("calling upstream with", lease.ID, "fencing token", lease.Token)
	rateLimited := false
	if rateLimited {
		// Give it back and keep everyone off it for a minute.
		err = lease.Cooldown(ctx, time.Minute)
	} else {
		err = lease.Release(ctx)
	}
	if err != nil {
		log.Print(err) // ErrLeaseExpired: it ran past its deadline
	}
}
