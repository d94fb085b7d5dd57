package redispool

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/crsched/crs/internal/leakcheck"
)

// Environment of the test run.
const (
	// envAddr points the tests at a running Redis instead of one they
	// start (its other keys are left alone: every test uses its own pool).
	envAddr = "CRS_REDIS_ADDR"
	// envRequire=1 makes a missing redis-server a failure, not a skip
	// (CI sets it, so that CI cannot pass by testing nothing).
	envRequire = "CRS_REQUIRE_REDIS"
	// envChild tells a re-executed test binary which child to be.
	envChild = "REDISPOOL_TEST_CHILD"
)

var (
	// testAddr is the Redis the tests use; "" when there is none.
	testAddr string
	// redisBin is the redis-server binary, for tests that start their own.
	redisBin string
	// whyNoRedis explains the skip when testAddr is "".
	whyNoRedis string
)

func TestMain(m *testing.M) {
	if role := os.Getenv(envChild); role != "" {
		os.Exit(runChild(role))
	}
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	redisBin, _ = exec.LookPath("redis-server")
	var srv *redisServer
	switch {
	case os.Getenv(envAddr) != "":
		testAddr = os.Getenv(envAddr)
	case redisBin != "":
		dir, err := os.MkdirTemp("", "redispool-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "redispool tests:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if srv, err = startServer(0, dir); err != nil {
			fmt.Fprintln(os.Stderr, "redispool tests: starting redis-server:", err)
			return 1
		}
		testAddr = srv.addr
	default:
		whyNoRedis = "redis-server is not in PATH (apt-get install redis-server) and " + envAddr + " is not set"
		if os.Getenv(envRequire) == "1" {
			fmt.Fprintf(os.Stderr, "redispool tests: %s=1 but %s\n", envRequire, whyNoRedis)
			return 1
		}
	}
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	if code == 0 {
		if leaked := leakcheck.Wait(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines outlived the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	return code
}
