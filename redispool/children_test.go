package redispool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The multi-process tests re-execute the test binary with envChild set
// to one of these roles; TestMain runs the role instead of the tests.
// Each child gets its settings from the environment (childEnv) and ends
// by itself, or when its parent closes its stdin or kills it.
const (
	roleExclusive = "exclusive" // acquire/release in a loop, log the holds
	roleHolder    = "holder"    // take leases, report them, then hang until killed
	roleWaiter    = "waiter"    // wait for a resource, report when woken
)

func childEnv(name string) string { return os.Getenv("REDISPOOL_" + name) }

func childInt(name string) int {
	n, err := strconv.Atoi(childEnv(name))
	if err != nil {
		panic(fmt.Sprintf("child setting %s=%q: %v", name, childEnv(name), err))
	}
	return n
}

func runChild(role string) int {
	if role == roleVersus { // versus_test.go: no pool of its own
		return runVersusChild()
	}
	client := redis.NewClient(&redis.Options{Addr: childEnv("ADDR"), ContextTimeoutEnabled: true})
	defer client.Close()
	pool, err := New(client, Options{Name: childEnv("POOL"), LeaseTTL: time.Duration(childInt("TTL_MS")) * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer pool.Close()
	switch role {
	case roleExclusive:
		err = childExclusive(pool)
	case roleHolder:
		err = childHolder(pool)
	case roleWaiter:
		err = childWaiter(pool)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
		return 1
	}
	return 0
}

// hold is one lease as its holder saw it: the interval in which it knew
// it held resource id (wall clock, ns; every process of the machine
// reads the same one), and the lease's token.
type hold struct {
	id         string
	token      uint64
	start, end int64
}

// childExclusive runs GOROUTINES goroutines that acquire, hold for a
// moment and release until DURATION_MS has passed, and writes every
// hold to the file LOG.
func childExclusive(pool *Pool) error {
	end := time.Now().Add(time.Duration(childInt("DURATION_MS")) * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		holds []hold
		errs  []error
	)
	for range childInt("GOROUTINES") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []hold
			defer func() {
				mu.Lock()
				holds = append(holds, mine...)
				mu.Unlock()
			}()
			for {
				l, err := pool.Acquire(ctx)
				if ctx.Err() != nil {
					if l != nil {
						_ = l.Release(context.Background())
					}
					return
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				h := hold{id: l.ID, token: l.Token, start: time.Now().UnixNano()}
				// Hold it for a moment, as a real holder would: the
				// longer the holds, the more they could overlap.
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				h.end = time.Now().UnixNano()
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = l.Release(rctx)
				rcancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("release %s #%d: %w", l.ID, l.Token, err))
					mu.Unlock()
					return
				}
				mine = append(mine, h)
			}
		}()
	}
	wg.Wait()
	var b strings.Builder
	for _, h := range holds {
		fmt.Fprintf(&b, "%s %d %d %d\n", h.id, h.token, h.start, h.end)
	}
	if err := os.WriteFile(childEnv("LOG"), []byte(b.String()), 0o600); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// childHolder takes COUNT leases, prints "held ID TOKEN" for each and
// "ready", then blocks until killed (or its stdin closes).
func childHolder(pool *Pool) error {
	for range childInt("COUNT") {
		l, err := pool.TryAcquire(context.Background())
		if err != nil {
			return err
		}
		fmt.Printf("held %s %d\n", l.ID, l.Token)
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return nil
}

// childWaiter, for each "go" line on stdin: Acquire, printing "parked"
// when it first blocks; once it has the lease, note the time, release
// and print "got NANOS".
func childWaiter(pool *Pool) error {
	var mu sync.Mutex
	reported := true
	pool.onParked(func() {
		mu.Lock()
		defer mu.Unlock()
		if !reported {
			reported = true
			fmt.Println("parked")
		}
	})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		mu.Lock()
		reported = false
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l, err := pool.Acquire(ctx)
		cancel()
		if err != nil {
			return err
		}
		woken := time.Now().UnixNano()
		if err := l.Release(context.Background()); err != nil {
			return err
		}
		mu.Lock()
		fmt.Printf("got %d\n", woken)
		mu.Unlock()
	}
	return in.Err()
}
