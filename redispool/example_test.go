package redispool_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

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

	// Each replica syncs the configured keys at start (and may on a
	// timer): the pool converges to them, whoever runs it.
	keys := []redispool.Resource{
		{ID: "key-a", Priority: 0, Capacity: 4},
		{ID: "key-b", Priority: 1, Capacity: 4},
	}
	if err := pool.Sync(ctx, keys); err != nil {
		log.Fatal(err)
	}

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, err := pool.Acquire(wctx) // waits for a free slot, in any replica
	if errors.Is(err, redispool.ErrPoolEmpty) {
		// Redis lost its data (a restart without persistence): put the
		// keys back and try again.
		if err = pool.Sync(ctx, keys); err == nil {
			lease, err = pool.Acquire(wctx)
		}
	}
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
