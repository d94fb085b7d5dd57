package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crsched/crs/harness/loadtest"
	"github.com/crsched/crs/internal/leakcheck"
	"github.com/crsched/crs/redispool"
)

// As in redispool's tests: CRS_REDIS_ADDR points at a running Redis;
// otherwise the tests start redis-server on a free loopback port, and skip
// without one unless CRS_REQUIRE_REDIS=1 (CI), where they fail.
const (
	envAddr    = "CRS_REDIS_ADDR"
	envRequire = "CRS_REQUIRE_REDIS"
)

var (
	testAddr   string // "" when there is no Redis
	whyNoRedis string
)

// envMain makes the test binary run the command itself (main), for the
// tests of what only a process shows: its whole stderr, its exit status.
const envMain = "CRSLOAD_REDIS_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) == "1" {
		main()
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	bin, _ := exec.LookPath("redis-server")
	stop := func() {}
	switch {
	case os.Getenv(envAddr) != "":
		testAddr = os.Getenv(envAddr)
	case bin != "":
		dir, err := os.MkdirTemp("", "crsload-redis-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "crsload tests:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if stop, err = startServer(bin, dir); err != nil {
			fmt.Fprintln(os.Stderr, "crsload tests: starting redis-server:", err)
			return 1
		}
	default:
		whyNoRedis = "redis-server is not in PATH (apt-get install redis-server) and " + envAddr + " is not set"
		if os.Getenv(envRequire) == "1" {
			fmt.Fprintf(os.Stderr, "crsload tests: %s=1 but %s\n", envRequire, whyNoRedis)
			return 1
		}
	}
	code := m.Run()
	stop()
	if code == 0 {
		if leaked := leakcheck.Wait(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines outlived the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	return code
}

// startServer starts redis-server on a free loopback port, with no
// persistence, sets testAddr, and returns how to stop it.
func startServer(bin, dir string) (func(), error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken meanwhile
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--logfile", filepath.Join(dir, "redis.log"), "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if lastErr = waitReady(addr, exited); lastErr == nil {
			testAddr = addr
			return stop, nil
		}
		stop()
	}
	return nil, lastErr
}

func waitReady(addr string, exited chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		switch {
		case err == nil:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("redis-server on %s does not answer: %w", addr, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited: %w", addr, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func needRedis(t *testing.T) {
	t.Helper()
	if testAddr == "" {
		t.Skip(whyNoRedis)
	}
}

// poolName is a pool of the test's own.
func poolName(t *testing.T) string {
	return fmt.Sprintf("crsload-test-%d-%s", time.Now().UnixNano(), t.Name())
}

// quickArgs shrink a run to about a second: few workers, short calls.
func quickArgs(pool string, more ...string) []string {
	return append([]string{"-redis", testAddr, "-redis-pool", pool, "-workers", "20", "-resources", "3",
		"-duration", "800ms", "-warmup", "100ms", "-latency", "uniform:1ms-5ms", "-timeout", "200ms", "-progress", "off"}, more...)
}

// crsload runs the command and returns its report, failing the test
// unless it exits 0 with its accounting OK.
func crsload(t *testing.T, args ...string) *loadtest.Report {
	t.Helper()
	r, err := run(t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run is crsload for any goroutine: it returns what went wrong.
func run(dir string, args ...string) (*loadtest.Report, error) {
	var r loadtest.Report
	if err := runJSON(dir, &r, args...); err != nil {
		return nil, err
	}
	return &r, nil
}

// runJSON runs the command and reads its -json report into v, unless it
// does not exit 0 with its accounting OK.
func runJSON(dir string, v any, args ...string) error {
	path := filepath.Join(dir, "report.json")
	var stdout, stderr bytes.Buffer
	code := loadtest.MainWith(context.Background(), append(args, "-json", path), &stdout, &stderr, redisExtension(&stderr))
	if code != 0 || !strings.Contains(stdout.String(), "Accounting: OK") {
		return fmt.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// noKeysLeft checks that the pool and its session left nothing in Redis.
func noKeysLeft(t *testing.T, pool string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testAddr})
	defer c.Close()
	keys, err := c.Keys(context.Background(), "{"+pool+"}*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// The records of the last writes (redispool's "{pool}:done:ID")
	// expire by themselves; the last token ("{pool}:token") stays.
	var left []string
	for _, k := range keys {
		if k == "{"+pool+"}:token" {
			if err := c.Del(context.Background(), k).Err(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if strings.HasPrefix(k, "{"+pool+"}:done:") {
			if ttl, err := c.PTTL(context.Background(), k).Result(); err == nil && ttl > 0 {
				continue
			}
		}
		left = append(left, k)
	}
	if len(left) > 0 {
		t.Fatalf("keys left behind: %v", left)
	}
}

func TestACooldownRunOnRedisBalancesItsAccounts(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	// Exclusive resources resting 2 ms after each release (Lease.Cooldown),
	// and suspended 5 ms after each failed call (Suspend).
	r := crsload(t, quickArgs(pool, "-scenario", "cooldown", "-cooldown", "2ms", "-failure-rate", "0.2", "-suspend", "5ms")...)
	q, calls := r.Requests, r.PoolState.Calls
	switch {
	case r.Pool != "redis" || !strings.Contains(r.PoolTitle, pool):
		t.Fatalf("pool %q, %q", r.Pool, r.PoolTitle)
	case q.Acquisitions == 0 || !q.CooldownChecked:
		t.Fatalf("%d acquisitions; cooldown checked: %v", q.Acquisitions, q.CooldownChecked)
	case calls.Cooldowns == 0 || calls.Suspends == 0:
		t.Fatalf("no cooldown or no suspension: %+v", calls)
	}
	checked := map[string]bool{}
	for _, c := range r.Accounting.Checks {
		checked[c.Name] = !c.Skipped
	}
	if !checked["no lease expired"] || !checked["no acquisition within a cooldown"] || checked["the scheduler's events agree"] {
		t.Fatalf("checks made: %v", checked)
	}
	noKeysLeft(t, pool)
}

// -eject works on a redispool pool: a failed call ends its lease with
// Lease.Fail, which feeds the pool's Ejection. backend-01 fails every
// call, the others none; on exclusive resources its calls come one at a
// time, so the third failure in a row ejects it, for longer than the
// run, and it is never handed out again until the end brings it back.
func TestTheFailureScenarioOnRedisEjectsAResourceThatKeepsFailing(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	r := crsload(t, quickArgs(pool, "-scenario", "failure", "-api", "lease", "-policy", "exclusive",
		"-failure-rate", "0", "-unhealthy-rate", "1", "-eject", "3", "-eject-base", "1m", "-eject-max", "0")...)
	u, calls := r.Resources[0], r.PoolState.Calls
	switch {
	case r.Config.Eject != 3:
		t.Fatalf("eject %d, want 3", r.Config.Eject)
	case u.Acquisitions != 3 || u.Failures != 3:
		t.Fatalf("%s: %d acquisitions, %d failures; want 3 of each, then an ejection", u.Name, u.Acquisitions, u.Failures)
	case calls.Fails != 3 || r.Requests.BackendFailures != 3:
		t.Fatalf("%d Lease.Fail calls for %d failed calls, want 3", calls.Fails, r.Requests.BackendFailures)
	case calls.Includes != 1:
		t.Fatalf("%d rests ended at the end, want 1 (the ejection)", calls.Includes)
	}
	noKeysLeft(t, pool)

	// Fail takes no cooldown: a failed call's cooldown is a suspension
	// started first, which the check of cooldowns holds to.
	pool = poolName(t)
	r = crsload(t, quickArgs(pool, "-scenario", "cooldown", "-cooldown", "2ms", "-failure-rate", "0.3",
		"-eject", "2", "-eject-base", "5ms", "-eject-max", "20ms")...)
	if calls := r.PoolState.Calls; !r.Requests.CooldownChecked || calls.Fails == 0 || calls.Cooldowns <= calls.Fails {
		t.Fatalf("cooldown checked: %v; calls %+v", r.Requests.CooldownChecked, calls)
	}
	noKeysLeft(t, pool)
}

func TestSeveralProcessesShareOnePool(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	// Each run is what a process does: its own client, pool handle and
	// session membership; Redis cannot tell them from processes.
	const runs = 3
	reports := make([]*loadtest.Report, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i], errs[i] = run(t.TempDir(), quickArgs(pool, "-policy", "exclusive", "-capacity", "2", "-seed", strconv.Itoa(i+1))...)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	for i, r := range reports {
		for _, c := range r.Accounting.Checks {
			if c.Name == "no lease expired" && !strings.Contains(c.Detail, strconv.Itoa(runs)+" crsload processes") {
				t.Errorf("run %d did not wait for the others: %s", i, c.Detail)
			}
		}
	}
	noKeysLeft(t, pool)
}

func TestRedisFlagsAreCheckedBeforeAnythingRuns(t *testing.T) {
	for _, args := range [][]string{
		{"-redis-pool", "x"},                             // without -redis
		{"-redis", "127.0.0.1:1", "-pool", "mutex"},      // two pools
		{"-redis", "127.0.0.1:1", "-redis-pool", "a{b}"}, // not a pool name
	} {
		var out bytes.Buffer
		if code := loadtest.MainWith(context.Background(), args, &out, &out, redisExtension(&out)); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, out.String())
		}
	}
	// Every acquisition is a lease: the failure scenario ejects, as it
	// does for the scheduler under -api lease.
	o, err := loadtest.ParseFlags([]string{"-redis", "127.0.0.1:1", "-scenario", "failure"}, &bytes.Buffer{}, redisExtension(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Config; c.Pool != "redis" || c.Workers != defaultWorkers || c.Eject != 5 || c.API != "lease" {
		t.Fatalf("pool %q, %d workers, eject %d, api %q", c.Pool, c.Workers, c.Eject, c.API)
	}
	// A scenario with fewer workers than the Redis default keeps them.
	o, err = loadtest.ParseFlags([]string{"-redis", "127.0.0.1:1", "-scenario", "cooldown"}, &bytes.Buffer{}, redisExtension(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Config; c.Workers != 8 {
		t.Fatalf("cooldown scenario on Redis: %d workers, want the scenario's 8", c.Workers)
	}
}

// The in-process scheduler's flags do nothing on a redispool pool: given
// with -redis, each is refused with one line naming it, before anything
// connects (127.0.0.1:1 would refuse the connection).
func TestRedisRefusesTheSchedulerFlagsItsPoolDoesNotRead(t *testing.T) {
	for _, args := range [][]string{
		{"-strategy", "local"}, {"-heaps", "2"}, {"-ordering", "global"}, {"-events=false"},
		{"-event-queue", "10"}, {"-api", "acquire"},
	} {
		var stdout, stderr bytes.Buffer
		all := append([]string{"-redis", "127.0.0.1:1", "-progress", "off"}, args...)
		code := loadtest.MainWith(context.Background(), all, &stdout, &stderr, redisExtension(&stderr))
		flag := strings.TrimLeft(strings.SplitN(args[0], "=", 2)[0], "-")
		if code != 2 || strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), "crsload-redis: "+flag+": ") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line about -%s", args, code, stderr.String(), flag)
		}
	}
	if _, err := loadtest.ParseFlags([]string{"-redis", "127.0.0.1:1", "-api", "lease"}, io.Discard, redisExtension(nil)); err != nil {
		t.Errorf("-api lease, what every acquisition is: %v", err)
	}
}

// A signal before the run began stops its setup: here a process that
// would wait (10 s) for the session's last process to close it, and
// would then join, add the resources and run, says that nothing ran and
// exits as the signal would have ended it, leaving nothing behind.
func TestASignalStopsTheSetupOfARunOnRedis(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	c := redis.NewClient(&redis.Options{Addr: testAddr})
	defer c.Close()
	key := "{" + pool + "}:crsload"
	if err := c.HSet(context.Background(), key, "closing", 1).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(loadtest.Interrupt{Signal: syscall.SIGTERM})
	var stdout, stderr bytes.Buffer
	code := loadtest.MainWith(ctx, quickArgs(pool), &stdout, &stderr, redisExtension(&stderr))
	if code != 143 || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.HasPrefix(stderr.String(), "crsload-redis: interrupted by SIGTERM before the run began") ||
		strings.Contains(stderr.String(), "still closing") || stdout.Len() > 0 {
		t.Errorf("exit %d, want 143\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if err := c.Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	noKeysLeft(t, pool)
}

func TestAProcessThatNeverFinishesFailsThePoolCheck(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	c := redis.NewClient(&redis.Options{Addr: testAddr})
	defer c.Close()
	ctx := context.Background()
	// The session of a process killed mid-run: it joined, and will never
	// leave.
	key := "{" + pool + "}:crsload"
	if err := c.HSet(ctx, key, "running", 1, "joined", 1).Err(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.Del(ctx, key).Err()
		p, err := redispool.New(c, redispool.Options{Name: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for i := 1; i <= 3; i++ {
			_ = p.Remove(ctx, fmt.Sprintf("backend-%02d", i))
		}
		noKeysLeft(t, pool)
	}()
	var stdout, stderr bytes.Buffer
	args := quickArgs(pool, "-duration", "200ms", "-redis-wait", "100ms")
	if code := loadtest.MainWith(ctx, args, &stdout, &stderr, redisExtension(&stderr)); code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"Accounting: FAILED", "[FAIL] the pool agrees", "1 other crsload process on this pool still running"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "waiting for 1 other crsload process") {
		t.Errorf("no note of the wait:\n%s", stderr.String())
	}
}

// A Redis that cannot be reached is one line of the command's own on
// stderr, none of the Redis client's logging, and an exit status of its
// own, which -h documents: 1 is a failed accounting.
func TestAnUnreachableRedisIsOneLineAndExitsThree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-redis", "127.0.0.1:1", "-progress", "off") // nothing listens on port 1
	cmd.Env = append(os.Environ(), envMain+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || stdout.Len() > 0 || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.HasPrefix(stderr.String(), "crsload-redis: redis: 127.0.0.1:1 cannot be reached: ") {
		t.Fatalf("%v; want exit status 3\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var help bytes.Buffer
	loadtest.MainWith(context.Background(), []string{"-h"}, &help, &help, redisExtension(&help))
	if !strings.Contains(strings.Join(strings.Fields(help.String()), " "), "cannot be reached, the command says so in one line and exits 3") {
		t.Errorf("-h does not document exit status 3:\n%s", help.String())
	}
}

func TestItsMessagesAndUsageGoByItsOwnName(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := loadtest.MainWith(context.Background(), []string{"-h"}, &stdout, &stderr, redisExtension(&stderr)); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	if !strings.Contains(stdout.String(), "Usage: crsload-redis [flags]") || !strings.Contains(stdout.String(), "  -redis host:port") {
		t.Errorf("-h:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := loadtest.MainWith(context.Background(), []string{"-workers", "x"}, &stdout, &stderr, redisExtension(&stderr)); code != 2 ||
		!strings.HasPrefix(stderr.String(), "crsload-redis: ") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr.String())
	}
}
