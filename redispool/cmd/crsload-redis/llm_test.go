package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/harness/loadtest"
	"github.com/crsched/crs/harness/mockprovider"
)

// llmArgs are a short llm run on pool against the provider at url: two
// keys whose budget a handful of calls spend, and more workers than that
// budget serves, so that the run meets the limits. The clients have the
// mock's exact limits: a key's bucket in Redis is counted at admission
// (config.Limit.Admission), so once a grant takes it from full it
// refills from the first answer on the key, never ahead of the
// provider's, however late the call reaches it.
func llmArgs(pool, url string, more ...string) []string {
	return append([]string{"-scenario", "llm", "-redis", testAddr, "-redis-pool", pool,
		"-provider", url + "/v1", "-provider-stats", "-keys", "sk-mock-1,sk-mock-2", "-rpm", "600", "-tpm", strconv.Itoa(mockTPM),
		"-prompt-tokens", "uniform:100-400", "-max-tokens", "uniform:100-400",
		"-workers", "4", "-duration", "1s", "-progress", "off"}, more...)
}

// mockTPM is the mock's tokens per minute per key.
const mockTPM = 3000

// mockProvider starts the mock provider on loopback with 600 requests
// and mockTPM tokens a minute per key, answering within a millisecond of
// admitting a call, which it does up to lag after receiving it.
func mockProvider(t *testing.T, lag time.Duration) *mockprovider.Server {
	t.Helper()
	p, err := mockprovider.New(mockprovider.Config{Keys: []string{"sk-mock-1", "sk-mock-2"},
		RequestsPerMinute: 600, TokensPerMinute: mockTPM, Latency: mockprovider.Latency{Max: time.Millisecond},
		AdmissionLag: mockprovider.Latency{Max: lag}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := mockprovider.Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Three processes share one pool of two keys and one provider that
// admits each call up to 100 ms after it arrives: the provider, the
// referee, refuses none of their calls, whatever the timing, since every
// bucket in Redis has the provider's limits and refills from the
// provider's answers once taken from full; every call served is settled,
// and the provider's counts are the sum of the processes'.
func TestProcessesSharingAPoolOfKeysAreNeverRefused(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	mock := mockProvider(t, 100*time.Millisecond)
	const runs = 3
	reports := make([]loadtest.LLMReport, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runJSON(t.TempDir(), &reports[i], llmArgs(pool, mock.URL, "-seed", strconv.Itoa(i+1))...)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}
	var served, attempts, limited uint64
	var tokens int64
	for i := range reports {
		lr := &reports[i]
		if lr.Client != "redis" || lr.ProviderStats == nil {
			t.Fatalf("process %d: not an llm run on Redis with the provider's stats: %+v", i, lr)
		}
		checked := map[string]bool{}
		for _, c := range lr.Accounting.Checks {
			checked[c.Name] = c.OK && !c.Skipped
		}
		for _, name := range []string{"every served call was settled", "no key's budget is in debt",
			"the pool has no lease and no waiter left", "no key spent more than its buckets allowed"} {
			if !checked[name] {
				t.Errorf("process %d: check %q not made or failed: %+v", i, name, lr.Accounting.Checks)
			}
		}
		served += lr.Calls.Served
		attempts += lr.Calls.Attempts
		limited += lr.Calls.RateLimited
		tokens += lr.Tokens.Total
	}
	total := mock.Stats().Total
	switch {
	case limited != 0 || total.RateLimited != 0:
		t.Errorf("429s: %d counted by the processes, %d sent by the provider; want none", limited, total.RateLimited)
	case int64(served) != total.Served || int64(attempts) != total.Received || tokens != total.TotalTokens:
		t.Errorf("processes: %d served of %d attempts, %d tokens; provider: %d served of %d received, %d tokens",
			served, attempts, tokens, total.Served, total.Received, total.TotalTokens)
	}
	noKeysLeft(t, pool)
}

func TestTheLLMScenarioOnRedisNeedsAProvider(t *testing.T) {
	var out bytes.Buffer
	args := []string{"-scenario", "llm", "-redis", "127.0.0.1:1"}
	if code := loadtest.MainWith(context.Background(), args, &out, &out, redisExtension(&out)); code != 2 || !strings.Contains(out.String(), "needs -provider") {
		t.Fatalf("%v: exit %d\n%s", args, code, out.String())
	}
}

// Keys without a tokens limit (-tpm 0) are leased for the calls' token
// estimates all the same, as the crs client's are (AllowUnknownLimits).
func TestKeysWithoutATokensLimitAreLeased(t *testing.T) {
	needRedis(t)
	pool := poolName(t)
	cfg := loadtest.Config{Workers: 1, Duration: time.Second, LLM: loadtest.LLMConfig{RPM: 600}}
	f := redisFlags{addr: testAddr, name: pool, wait: time.Second}
	c, err := openLLMClient(context.Background(), cfg, []string{"sk-mock-1"}, f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Pick(context.Background(), loadtest.LLMCall{Prompt: 100, MaxTokens: 100, Estimate: 200})
	if err != nil {
		t.Fatalf("Pick: %v", err)
	}
	if err := h.Unsent(); err != nil {
		t.Fatal(err)
	}
	if err := c.p.Finish(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	noKeysLeft(t, pool)
}
