// A program outside the repository that uses the redispool module as users
// do. It is built, not run: it needs no server.
package main

import (
	"log"

	"github.com/crsched/crs/redispool"
	"github.com/redis/go-redis/v9"
)

func main() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	pool, err := redispool.New(client, redispool.Options{Name: "keys"})
	if err != nil {
		log.Fatal(err)
	}
	_ = pool
}
