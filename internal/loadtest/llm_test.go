package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/internal/mockprovider"
)

func TestLLMScenarioDefaultsGiveTheIssuesSettings(t *testing.T) {
	c := scenarioConfig(t, LLM)
	if c.Workers != 50 || c.Resources != 4 || c.Warmup != 0 || c.Pool != "crs" {
		t.Fatalf("llm: %d workers, %d resources, warm-up %v, pool %s", c.Workers, c.Resources, c.Warmup, c.Pool)
	}
	if c.LLM.RPM != 600 || c.LLM.TPM != 40000 || c.LLM.Provider != "" {
		t.Fatalf("llm limits %d rpm, %d tpm, provider %q", c.LLM.RPM, c.LLM.TPM, c.LLM.Provider)
	}
	if got := c.LLM.keys(c.Resources); strings.Join(got, ",") != "sk-mock-1,sk-mock-2,sk-mock-3,sk-mock-4" {
		t.Fatalf("keys %v", got)
	}
}

// The default workload must be bound by its tokens budget, with demand
// well above it: the scenario is there to show a client using a budget
// it cannot exceed.
func TestLLMDefaultDemandExceedsTheBindingBudget(t *testing.T) {
	c := scenarioConfig(t, LLM)
	lc := c.LLM
	// A call spends its prompt and, on average, half of max_tokens plus a
	// half (the mock draws the completion from 1 to max_tokens).
	spent := lc.Prompt.Mean() + (lc.MaxTokens.Mean()+1)/2
	tokenCalls := float64(lc.TPM) / spent // per key per minute
	if tokenCalls >= float64(lc.RPM) {
		t.Fatalf("%.0f calls a minute fit the tokens budget, %d the requests: tokens do not bind", tokenCalls, lc.RPM)
	}
	// Back to back, a worker makes at most a call per mean latency.
	meanLatency := (lc.Latency.Min + lc.Latency.Max) / 2
	demand := float64(c.Workers) * float64(time.Minute) / float64(meanLatency)
	budget := float64(c.Resources) * tokenCalls
	if demand < 4*budget {
		t.Fatalf("demand %.0f calls a minute against a budget of %.0f", demand, budget)
	}
}

func TestLLMFlagsParse(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte("# keys\nk1\n\n k2 \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := ParseFlags([]string{"-scenario", "llm", "-provider", "http://127.0.0.1:9/", "-keys", "@" + file,
		"-rpm", "60", "-tpm", "1000", "-prompt-tokens", "fixed:10", "-max-tokens", "uniform:5-20",
		"-provider-latency", "uniform:1ms-2ms", "-pool", "naive", "-json", "-"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	lc := o.Config.LLM
	if strings.Join(lc.Keys, ",") != "k1,k2" || o.Config.Resources != 2 || lc.RPM != 60 || lc.TPM != 1000 ||
		lc.Prompt != (Tokens{10, 10}) || lc.MaxTokens != (Tokens{5, 20}) ||
		lc.Latency != (mockprovider.Latency{Min: time.Millisecond, Max: 2 * time.Millisecond}) || o.Config.Pool != "naive" {
		t.Fatalf("parsed %+v", o.Config)
	}
	o, err = ParseFlags([]string{"-scenario", "llm", "-keys", "a, b,c"}, &bytes.Buffer{})
	if err != nil || strings.Join(o.Config.LLM.Keys, ",") != "a,b,c" || o.Config.Resources != 3 {
		t.Fatalf("-keys a, b,c: %v, %v", o.Config.LLM.Keys, err)
	}
}

func TestLLMFlagsRejectWhatTheScenarioCannotRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rpm", "10"}, "only with -scenario llm"},
		{[]string{"-provider", "http://x"}, "only with -scenario llm"},
		{[]string{"-pool", "naive"}, "only with -scenario llm"},
		{[]string{"-scenario", "llm", "-pool", "mutex"}, "crs or naive"},
		{[]string{"-scenario", "llm", "-html", "x.html"}, "html"},
		{[]string{"-scenario", "llm", "-provider", "http://x", "-keys", "k", "-compare"}, "fresh provider"},
		{[]string{"-scenario", "llm", "-provider", "http://x"}, "needs the provider's keys"},
		{[]string{"-scenario", "llm", "-provider", "x:1", "-keys", "k"}, "http://"},
		{[]string{"-scenario", "llm", "-keys", "a,a"}, "given twice"},
		{[]string{"-scenario", "llm", "-keys", "a,,b"}, "not a key"},
		{[]string{"-scenario", "llm", "-keys", "a,b", "-resources", "3"}, "gives 2 keys"},
		{[]string{"-scenario", "llm", "-keys", "@/nonexistent/keys"}, "keys"},
		{[]string{"-scenario", "llm", "-rpm", "0", "-tpm", "0"}, "at least one limit"},
		{[]string{"-scenario", "llm", "-rpm", "-1"}, "want >= 0"},
		{[]string{"-scenario", "llm", "-tpm", "500"}, "could never be served"},
		{[]string{"-scenario", "llm", "-prompt-tokens", "uniform:0-5"}, "1 <= MIN"},
		{[]string{"-scenario", "llm", "-max-tokens", "fixed:x"}, "fixed:N"},
		{[]string{"-scenario", "llm", "-provider-latency", "uniform:2s-1s"}, "MIN-MAX"},
	} {
		_, err := ParseFlags(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

func TestTokensRoundTripThroughTheirFlagForm(t *testing.T) {
	for _, s := range []string{"fixed:1", "uniform:50-750"} {
		v, err := ParseTokens(s)
		if err != nil || v.String() != s {
			t.Fatalf("%s: %v, %v", s, v, err)
		}
	}
}

func TestBudgetIsAFullBucketPlusTheRefillOverTheWindow(t *testing.T) {
	if got := allowedOver(40000, 0); got != 40000 {
		t.Fatalf("over no time: %d", got)
	}
	if got := allowedOver(40000, 90*time.Second); got != 100000 {
		t.Fatalf("over 90 s: %d, want 40000 + 60000", got)
	}
	lc := LLMConfig{RPM: 600, TPM: 40000}
	b, binding := budgets(lc, 4, time.Minute, 1200, 300000)
	if len(b) != 2 || b[0].Allowed != 4*1200 || b[1].Allowed != 4*80000 {
		t.Fatalf("budgets %+v", b)
	}
	if binding != "tokens" || b[1].Share != 300000.0/320000 || b[0].Share != 0.25 {
		t.Fatalf("binding %s, budgets %+v", binding, b)
	}
	b, binding = budgets(LLMConfig{RPM: 600}, 1, time.Minute, 600, 5)
	if len(b) != 1 || binding != "requests" || b[0].Share != 0.5 {
		t.Fatalf("requests only: %s %+v", binding, b)
	}
}

func TestAnswersAreReadLikeOpenAIs(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", "2")
	if got := retryAfter(h); got != 2*time.Second {
		t.Fatalf("Retry-After 2: %v", got)
	}
	h.Set("retry-after-ms", "1500.5")
	if got := retryAfter(h); got != 1500500*time.Microsecond {
		t.Fatalf("retry-after-ms 1500.5 read before Retry-After: %v", got)
	}
	if got := retryAfter(http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}}); got != 0 {
		t.Fatalf("an HTTP date: %v", got)
	}
	h = http.Header{}
	h.Set("x-ratelimit-remaining-tokens", "1234")
	h.Set("x-ratelimit-reset-tokens", "6m0s")
	h.Set("x-ratelimit-remaining-requests", "junk")
	got := rateHeaders(h)
	if len(got) != 1 || got["tokens"] != (remaining{units: 1234, reset: 6 * time.Minute}) {
		t.Fatalf("rate headers %+v", got)
	}
}

// tinyLLM is an llm run small enough for a test: two keys whose budget a
// handful of calls spend, a mock that answers at once, and more workers
// than the budget serves, so that the run meets the limits.
func tinyLLM(pool string) Config {
	c := Default()
	c.Scenario, c.Pool = LLM, pool
	c.Workers, c.Resources = 6, 2
	c.Duration = 300 * time.Millisecond
	c.Warmup = 0
	c.LLM = DefaultLLM
	c.LLM.RPM, c.LLM.TPM = 600, 3000
	c.LLM.Prompt, c.LLM.MaxTokens = Tokens{100, 400}, Tokens{100, 400}
	c.LLM.Latency = mockprovider.Latency{Min: 0, Max: time.Millisecond}
	return c
}

// The mock referees the run: whatever the timing, a client's counts are
// the mock's, and no key is served beyond its buckets.
func TestLLMRunsBalanceTheirAccountsAgainstTheMock(t *testing.T) {
	t.Parallel()
	for _, pool := range []string{"crs", "naive"} {
		t.Run(pool, func(t *testing.T) {
			t.Parallel()
			r, err := Run(context.Background(), tinyLLM(pool), nil)
			if err != nil {
				t.Fatal(err)
			}
			lr := r.LLM
			if lr == nil || !r.Accounting.OK || !lr.Accounting.OK {
				var b strings.Builder
				writeAccounting(&b, r.Accounting)
				t.Fatalf("accounting failed:\n%s", b.String())
			}
			s := lr.ProviderStats
			// How many calls a short run serves depends on the machine's
			// speed; that the client and the mock agree does not.
			if s == nil {
				t.Fatalf("no mock stats: %+v", lr.Calls)
			}
			if int64(lr.Calls.RateLimited) != s.Total.RateLimited || int64(lr.Calls.Served) != s.Total.Served {
				t.Fatalf("client %+v, mock %+v", lr.Calls, s.Total)
			}
			for _, k := range s.Keys {
				if k.Served > k.RequestsAllowed || k.TotalTokens > k.TokensAllowed {
					t.Fatalf("key %s served beyond its buckets: %+v", k.Key, k)
				}
			}
			if lr.Latency.Unfinished.Count != lr.Calls.Unfinished {
				t.Fatalf("%d unfinished waits for %d unfinished calls", lr.Latency.Unfinished.Count, lr.Calls.Unfinished)
			}
			if lr.Binding == "" || len(lr.Budgets) != 2 || lr.Latency.Total.Count != lr.Calls.Served {
				t.Fatalf("report: binding %q, budgets %+v, %d latencies for %d served", lr.Binding, lr.Budgets, lr.Latency.Total.Count, lr.Calls.Served)
			}
		})
	}
}

func TestLLMReportsNameTheirFiguresInTextAndJSON(t *testing.T) {
	t.Parallel()
	var out, errs bytes.Buffer
	status := Main(context.Background(), []string{"-scenario", "llm", "-workers", "4", "-resources", "2",
		"-duration", "200ms", "-tpm", "3000", "-prompt-tokens", "uniform:100-400", "-max-tokens", "uniform:100-400",
		"-provider-latency", "fixed:0s", "-compare", "-progress", "off", "-json", "-"}, &out, &errs)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	base, _ := doc["baseline"].(map[string]any)
	if doc["client"] != "crs" || base == nil || base["client"] != "naive" {
		t.Fatalf("JSON clients: %v and baseline %v", doc["client"], base)
	}
	for _, field := range []string{"calls", "budgets", "binding_share", "latency", "per_key", "provider_stats", "accounting"} {
		if _, ok := doc[field]; !ok {
			t.Errorf("JSON report lacks %q", field)
		}
	}
	calls := doc["calls"].(map[string]any)
	for _, field := range []string{"served", "rate_limited", "rate_limited_share", "attempts"} {
		if _, ok := calls[field]; !ok {
			t.Errorf("JSON calls lack %q", field)
		}
	}
	text := errs.String() // the text report goes to stderr when the JSON goes to stdout
	for _, want := range []string{"429s received", "binding budget used", "added latency p99", "Budget", "tokens", "Accounting: OK"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

func TestTheNaiveClientGoesRoundRobinAndWaitsOutARetryAfter(t *testing.T) {
	n := newNaiveClient(3)
	var got []int
	for i := 0; i < 5; i++ {
		h, err := n.pick(context.Background(), llmCall{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.key())
	}
	if want := []int{0, 1, 2, 0, 1}; !equalInts(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	h, _ := n.pick(context.Background(), llmCall{})
	if wait, err := h.refused(llmAnswer{status: 429, retryAfter: 1500 * time.Millisecond}); wait != 1500*time.Millisecond || err != nil {
		t.Fatalf("after a 429: wait %v, %v", wait, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n.pick(ctx, llmCall{}); err == nil {
		t.Fatal("picked a key for a call whose window has ended")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestA200WithoutUsageIsAnError(t *testing.T) {
	for _, body := range []string{`{"choices": []}`, `not json`, `{"usage": "x"}`} {
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		if a := readAnswer(resp); a.err == nil || a.status != 0 {
			t.Errorf("%s: read as status %d, error %v", body, a.status, a.err)
		}
	}
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(
		`{"usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}`))}
	if a := readAnswer(resp); a.err != nil || a.usage.Total != 7 || a.usage.Prompt != 3 || a.usage.Completion != 4 {
		t.Fatalf("usage read as %+v, %v", a.usage, a.err)
	}
}

// A real provider's keys are secrets: the report names them by number.
func TestTheReportNeverShowsARealProvidersKeys(t *testing.T) {
	c := tinyLLM("naive")
	c.LLM.Provider, c.LLM.Keys = "https://example.invalid", []string{"sk-secret-1", "sk-secret-2"}
	r := &llmRun{cfg: c, keys: c.LLM.Keys}
	r.k.keys = make([]llmKeyCounters, 2)
	var b bytes.Buffer
	if err := WriteJSON(&b, &Report{LLM: r.report(time.Second, time.Second, nil, nil, nil, c.LLM.Provider)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "secret") || !strings.Contains(b.String(), `"key-2"`) {
		t.Fatalf("report:\n%s", b.String())
	}
}

func TestTheAccountingFailsWhenTheMockDisagrees(t *testing.T) {
	lr := &LLMReport{
		Calls:  LLMCalls{Calls: 10, Served: 8, Unfinished: 2, Attempts: 9, RateLimited: 1},
		Tokens: LLMTokens{Total: 800},
		ProviderStats: &mockprovider.Stats{RequestsPerMinute: 60, Total: mockprovider.KeyStats{
			Received: 9, Served: 8, RateLimited: 1, TotalTokens: 800}},
	}
	if a := llmAccounting(lr, nil); !a.OK {
		t.Fatalf("matching counts failed: %+v", a)
	}
	lr.ProviderStats.Total.RateLimited = 2
	if a := llmAccounting(lr, nil); a.OK {
		t.Fatal("a 429 the client did not count passed")
	}
	lr.ProviderStats.Total.RateLimited = 1
	lr.ProviderStats.Keys = []mockprovider.KeyStats{{Key: "k", Served: 61, RequestsAllowed: 60}}
	if a := llmAccounting(lr, nil); a.OK {
		t.Fatal("a key served beyond its bucket passed")
	}
	lr.ProviderStats.Keys = nil
	if a := llmAccounting(lr, []Check{{Name: "client", OK: false}}); a.OK {
		t.Fatal("a failed client check passed")
	}
}

func TestAnInterruptedLLMRunSaysSoAndSkipsTheMocksCrossCheck(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, tinyLLM("naive"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Interrupted == nil || r.LLM.Interrupted == nil {
		t.Fatal("not marked interrupted")
	}
	for _, c := range r.LLM.Accounting.Checks {
		if c.Name == "the mock's counts are the client's" && !c.Skipped {
			t.Fatalf("cross-check made on an interrupted run: %+v", c)
		}
	}
}

// crsTestClient is the crs client on a clock that only the test moves,
// with one key of 60 rpm and 1000 tpm.
func crsTestClient(t *testing.T) *crsClient {
	t.Helper()
	c, err := newCRSClient(LLMConfig{RPM: 60, TPM: 1000}, []string{"k"}, fakeclock.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

func remainingOf(t *testing.T, c *crsClient) map[string]int64 {
	t.Helper()
	left, err := c.s.Remaining("k")
	if err != nil {
		t.Fatal(err)
	}
	return left
}

func TestTheCRSClientSettlesAServedCallToItsUsage(t *testing.T) {
	c := crsTestClient(t)
	h, err := c.pick(context.Background(), llmCall{prompt: 100, maxTokens: 500, estimate: 600})
	if err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 400 || left["requests"] != 59 {
		t.Fatalf("leased on an estimate of 600: %v left", left)
	}
	a := llmAnswer{status: 200}
	a.usage.Total = 150
	if err := h.served(a); err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 850 || left["requests"] != 59 {
		t.Fatalf("settled to a usage of 150: %v left", left)
	}
	if st := c.s.Stats(); st.Holders != 0 {
		t.Fatalf("%d leases held after the answer", st.Holders)
	}
}

func TestTheCRSClientLowersItsBucketsToWhatTheProviderSays(t *testing.T) {
	c := crsTestClient(t)
	h, err := c.pick(context.Background(), llmCall{prompt: 10, maxTokens: 10, estimate: 20})
	if err != nil {
		t.Fatal(err)
	}
	a := llmAnswer{status: 200, remaining: map[string]remaining{
		"tokens": {units: 300, reset: 42 * time.Second}, "requests": {units: 10, reset: 50 * time.Second}}}
	a.usage.Total = 20
	if err := h.served(a); err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 300 || left["requests"] != 10 {
		t.Fatalf("after the provider said 300 tokens and 10 requests: %v left", left)
	}
}

func TestTheCRSClientRefundsACallItDidNotSend(t *testing.T) {
	c := crsTestClient(t)
	h, err := c.pick(context.Background(), llmCall{prompt: 100, maxTokens: 500, estimate: 600})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.unsent(); err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 1000 || left["requests"] != 60 {
		t.Fatalf("after an unsent call: %v left", left)
	}
}

func TestTheCRSClientRestsAKeyThatAnswered429(t *testing.T) {
	c := crsTestClient(t)
	h, err := c.pick(context.Background(), llmCall{prompt: 1, maxTokens: 1, estimate: 2})
	if err != nil {
		t.Fatal(err)
	}
	wait, err := h.refused(llmAnswer{status: 429, retryAfter: time.Second})
	if err != nil || wait != 0 {
		t.Fatalf("refused: wait %v, %v; want 0: the key rests in the scheduler", wait, err)
	}
	if st := c.s.Stats(); st.SuspendedResources != 1 || st.Holders != 0 {
		t.Fatalf("%d keys resting, %d leases held", st.SuspendedResources, st.Holders)
	}
}
