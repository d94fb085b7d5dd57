package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/mockprovider"
	"github.com/crsched/crs/internal/fakeclock"
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
		"-pool", "naive", "-json", "-"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	lc := o.Config.LLM
	if strings.Join(lc.Keys, ",") != "k1,k2" || o.Config.Resources != 2 || lc.RPM != 60 || lc.TPM != 1000 ||
		lc.Prompt != (Tokens{10, 10}) || lc.MaxTokens != (Tokens{5, 20}) || o.Config.Pool != "naive" {
		t.Fatalf("parsed %+v", o.Config)
	}
	o, err = ParseFlags([]string{"-scenario", "llm", "-provider-latency", "uniform:1ms-2ms"}, &bytes.Buffer{})
	if err != nil || o.Config.LLM.Latency != (mockprovider.Latency{Min: time.Millisecond, Max: 2 * time.Millisecond}) {
		t.Fatalf("-provider-latency uniform:1ms-2ms: %+v, %v", o.Config.LLM.Latency, err)
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
		{[]string{"-scenario", "llm", "-latency", "fixed:1ms"}, "latency: not read by -scenario llm"},
		{[]string{"-scenario", "llm", "-warmup", "1s"}, "warmup: not read by -scenario llm"},
		{[]string{"-scenario", "llm", "-policy", "exclusive"}, "policy: not read by -scenario llm"},
		{[]string{"-scenario", "llm", "-timeout", "1s"}, "timeout: not read by -scenario llm"},
		{[]string{"-scenario", "llm", "-events=false"}, "events: not read by -scenario llm"},
		{[]string{"-provider-stats"}, "only with -scenario llm"},
		{[]string{"-scenario", "llm", "-provider-stats"}, "provider-stats: needs -provider"},
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

// Every flag the llm scenario does not read is refused with it, and
// every flag that only it reads is refused elsewhere.
func TestTheLLMScenarioRefusesEveryFlagItDoesNotRead(t *testing.T) {
	reads := map[string]bool{"html": true} // refused when set to a file: see above
	for _, name := range append(llmReads, llmFlags...) {
		reads[name] = true
	}
	n := 0
	harnessFlags(func(f *flag.Flag) {
		if reads[f.Name] {
			return
		}
		n++
		args := []string{"-scenario", "llm", "-" + f.Name + "=" + f.DefValue}
		if _, err := ParseFlags(args, io.Discard); err == nil || !strings.Contains(err.Error(), f.Name+": ") {
			t.Errorf("%v: %v, want an error naming -%s", args, err, f.Name)
		}
	})
	if n < 10 {
		t.Fatalf("only %d flags checked", n)
	}
	for _, name := range llmFlags {
		args := []string{"-" + name + "=x"}
		if name == "provider-stats" {
			args = []string{"-provider-stats"}
		}
		if _, err := ParseFlags(args, io.Discard); err == nil || !strings.Contains(err.Error(), "only with -scenario llm") &&
			!strings.Contains(err.Error(), "invalid") {
			t.Errorf("%v: %v", args, err)
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
	if len(got) != 1 || got["tokens"] != (Remaining{Units: 1234, Reset: 6 * time.Minute}) {
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
	c.Eject, c.EjectBase = 3, 2*time.Second // the scenario's
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

// The naive client may serve a few more calls than crs; beside what
// each client served, the comparison shows what it paid for it: its 429s,
// as a count and a share of its attempts, and its latency p99.
func TestTheLLMComparisonShowsWhatEachClientPaidForWhatItServed(t *testing.T) {
	crs := &LLMReport{Client: "crs", Calls: LLMCalls{Served: 429, Attempts: 429}}
	crs.Latency.Total.P99 = int64(10400 * time.Millisecond)
	naive := &LLMReport{Client: "naive", Calls: LLMCalls{Served: 446, Attempts: 1666, RateLimited: 1220, RateLimitedShare: 1220.0 / 1666}}
	naive.Latency.Total.P99 = int64(33800 * time.Millisecond)
	var b strings.Builder
	if err := WriteComparison(&b, &Report{LLM: crs}, &Report{LLM: naive}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	served := ""
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "calls served") {
			served = line
		}
	}
	for _, want := range []string{
		"paid: 429s received", "0 (0.00% of attempts)", "1,220 (73.23% of attempts)", "paid: total latency p99",
		"naive served 17 more calls than crs (3.96% more), paying 1,220 429s (73.23% of its attempts) and a latency p99 of 33.8s",
		"crs paid 0 429s (0.00% of its attempts) and a latency p99 of 10.4s",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, text)
		}
	}
	// The rows of what was paid come right after the row of what was served.
	if i := strings.Index(text, served); i < 0 || !strings.HasPrefix(strings.TrimSpace(text[i+len(served):]), "paid: 429s received") {
		t.Errorf("what each client paid is not beside what it served:\n%s", text)
	}
}

func TestTheNaiveClientGoesRoundRobinAndWaitsOutARetryAfter(t *testing.T) {
	n := newNaiveClient(3)
	var got []int
	for i := 0; i < 5; i++ {
		h, err := n.Pick(context.Background(), LLMCall{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Key())
	}
	if want := []int{0, 1, 2, 0, 1}; !equalInts(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	h, _ := n.Pick(context.Background(), LLMCall{})
	if wait, err := h.Refused(LLMAnswer{Status: 429, RetryAfter: 1500 * time.Millisecond}); wait != 1500*time.Millisecond || err != nil {
		t.Fatalf("after a 429: wait %v, %v", wait, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n.Pick(ctx, LLMCall{}); err == nil {
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
		if a := readAnswer(resp); a.Err == nil || a.Status != 0 {
			t.Errorf("%s: read as status %d, error %v", body, a.Status, a.Err)
		}
	}
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(
		`{"usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}`))}
	if a := readAnswer(resp); a.Err != nil || a.Usage.Total != 7 || a.Usage.Prompt != 3 || a.Usage.Completion != 4 {
		t.Fatalf("usage read as %+v, %v", a.Usage, a.Err)
	}
}

// A real provider's keys are secrets: the report names them by their
// start and last four characters.
func TestTheReportNeverShowsARealProvidersKeys(t *testing.T) {
	c := tinyLLM("naive")
	c.LLM.Provider, c.LLM.Keys = "https://example.invalid", []string{"sk-secret-0123456789-key1", "sk-secret-0123456789-key2"}
	r := &llmRun{cfg: c, keys: c.LLM.Keys}
	r.k.keys = make([]llmKeyCounters, 2)
	var b bytes.Buffer
	if err := WriteJSON(&b, &Report{LLM: r.report(time.Second, time.Second, nil, nil, nil, c.LLM.Provider)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "secret") || !strings.Contains(b.String(), `"sk-...key2"`) {
		t.Fatalf("report:\n%s", b.String())
	}
}

// A provider URL may carry credentials (https://user:pass@host/v1): the
// report shows the URL without the password.
func TestTheReportNeverShowsAProviderURLsPassword(t *testing.T) {
	c := tinyLLM("naive")
	c.LLM.Provider, c.LLM.Keys = "https://gateway:hunter2@example.invalid/v1", []string{"k1"}
	r := &llmRun{cfg: c, keys: c.LLM.Keys}
	r.k.keys = make([]llmKeyCounters, 1)
	rep := &Report{LLM: r.report(time.Second, time.Second, nil, nil, nil, c.LLM.Provider)}
	var j, txt bytes.Buffer
	if err := WriteJSON(&j, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&txt, rep); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"JSON": j.String(), "text": txt.String()} {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "example.invalid") {
			t.Errorf("%s report:\n%s", name, out)
		}
	}
}

func TestTheAccountingFailsWhenTheMockDisagrees(t *testing.T) {
	lr := &LLMReport{
		Mock:   true,
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
	c, err := newCRSClient(context.Background(), LLMConfig{RPM: 60, TPM: 1000}, config.Ejection{}, []string{"k"}, fakeclock.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
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
	h, err := c.Pick(context.Background(), LLMCall{Prompt: 100, MaxTokens: 500, Estimate: 600})
	if err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 400 || left["requests"] != 59 {
		t.Fatalf("leased on an estimate of 600: %v left", left)
	}
	a := LLMAnswer{Status: 200}
	a.Usage.Total = 150
	if err := h.Served(a); err != nil {
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
	h, err := c.Pick(context.Background(), LLMCall{Prompt: 10, MaxTokens: 10, Estimate: 20})
	if err != nil {
		t.Fatal(err)
	}
	a := LLMAnswer{Status: 200, Remaining: map[string]Remaining{
		"tokens": {Units: 300, Reset: 42 * time.Second}, "requests": {Units: 10, Reset: 50 * time.Second}}}
	a.Usage.Total = 20
	if err := h.Served(a); err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 300 || left["requests"] != 10 {
		t.Fatalf("after the provider said 300 tokens and 10 requests: %v left", left)
	}
}

func TestTheCRSClientRefundsACallItDidNotSend(t *testing.T) {
	c := crsTestClient(t)
	h, err := c.Pick(context.Background(), LLMCall{Prompt: 100, MaxTokens: 500, Estimate: 600})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unsent(); err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 1000 || left["requests"] != 60 {
		t.Fatalf("after an unsent call: %v left", left)
	}
}

func TestTheCRSClientRestsAKeyThatAnswered429(t *testing.T) {
	c := crsTestClient(t)
	h, err := c.Pick(context.Background(), LLMCall{Prompt: 1, MaxTokens: 1, Estimate: 2})
	if err != nil {
		t.Fatal(err)
	}
	wait, err := h.Refused(LLMAnswer{Status: 429, RetryAfter: time.Second})
	if err != nil || wait != 0 {
		t.Fatalf("refused: wait %v, %v; want 0: the key rests in the scheduler", wait, err)
	}
	if st := c.s.Stats(); st.SuspendedResources != 1 || st.Holders != 0 {
		t.Fatalf("%d keys resting, %d leases held", st.SuspendedResources, st.Holders)
	}
}

// untilWaiting waits until n callers wait in c's scheduler.
func untilWaiting(t *testing.T, c *crsClient, n int) {
	t.Helper()
	for c.s.Stats().Waiters != n {
		runtime.Gosched()
	}
}

// A provider that keeps a call's estimate charged (mockprovider's
// KeepEstimate) gives no refund: the refund the client settles must not
// reach a waiter before the provider's lower figure does, or that waiter
// goes out to a key the provider has not the budget for.
func TestARefundThatTheProviderKeptServesNoWaiter(t *testing.T) {
	c := crsTestClient(t)
	x, err := c.Pick(context.Background(), LLMCall{Prompt: 100, MaxTokens: 500, Estimate: 600})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		h   LLMHold
		err error
	}
	got := make(chan result, 1)
	go func() {
		h, err := c.Pick(ctx, LLMCall{Prompt: 100, MaxTokens: 400, Estimate: 500}) // 400 tokens left: it waits
		got <- result{h, err}
	}()
	untilWaiting(t, c, 1)
	// The call spent 100 of its 600, and the provider kept the 600: it
	// says 400 tokens are left.
	a := LLMAnswer{Status: 200, Remaining: map[string]Remaining{"tokens": {Units: 400}, "requests": {Units: 59}}}
	a.Usage.Total = 100
	if err := x.Served(a); err != nil {
		t.Fatal(err)
	}
	if st := c.s.Stats(); st.Holders != 0 {
		t.Errorf("the waiter for 500 tokens got a key the provider has 400 left on")
	}
	if left := remainingOf(t, c); left["tokens"] != 400 {
		t.Errorf("the bucket holds %d tokens, the provider said 400", left["tokens"])
	}
	cancel()
	if r := <-got; r.h != nil {
		t.Errorf("the waiter was granted a key")
		r.h.Unsent()
	} else if !errors.Is(r.err, context.Canceled) {
		t.Errorf("the waiter: %v", r.err)
	}
}

// A provider that refunds the unused estimate says so, and the refund
// then serves the waiter at once.
func TestARefundThatTheProviderGaveServesTheWaiter(t *testing.T) {
	c := crsTestClient(t)
	x, err := c.Pick(context.Background(), LLMCall{Prompt: 100, MaxTokens: 500, Estimate: 600})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan LLMHold, 1)
	go func() {
		h, err := c.Pick(context.Background(), LLMCall{Prompt: 100, MaxTokens: 400, Estimate: 500})
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	untilWaiting(t, c, 1)
	a := LLMAnswer{Status: 200, Remaining: map[string]Remaining{"tokens": {Units: 900}, "requests": {Units: 59}}}
	a.Usage.Total = 100
	if err := x.Served(a); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h == nil {
		t.FailNow()
	}
	if left := remainingOf(t, c); left["tokens"] != 400 {
		t.Errorf("after the refund and the waiter's 500: %d tokens left, want 400", left["tokens"])
	}
	if err := h.Unsent(); err != nil {
		t.Fatal(err)
	}
}

// The base URL is OpenAI clients' (https://api.openai.com/v1), or the
// host alone: either way the calls go to one /v1/chat/completions.
func TestTheProviderURLMayEndInV1(t *testing.T) {
	paths := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		io.WriteString(w, `{"usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}`)
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL, srv.URL + "/", srv.URL + "/v1", srv.URL + "/v1/"} {
		h := newLLMHTTP(base, "m", 1)
		a := h.send(context.Background(), "k", LLMCall{Prompt: 1, MaxTokens: 1, Estimate: 2}, 0)
		h.close()
		if a.Status != 200 {
			t.Fatalf("%s: %+v", base, a)
		}
		if p := <-paths; p != "/v1/chat/completions" {
			t.Errorf("-provider %s: the call went to %s", base, p)
		}
	}
	if got := statsURL(srv.URL + "/v1/"); got != srv.URL+"/stats" {
		t.Errorf("stats of %s/v1/: %s", srv.URL, got)
	}
}

// With -provider-stats, a mock started apart (as cmd/mockprovider) is
// read at the end: its counters are every client's, so the report shows
// them as the provider's view, and they still referee the budgets.
func TestProviderStatsReadAMockStartedApart(t *testing.T) {
	t.Parallel()
	cfg := tinyLLM("crs")
	keys := cfg.LLM.keys(cfg.Resources)
	p, err := mockprovider.New(mockprovider.Config{Keys: keys, RequestsPerMinute: cfg.LLM.RPM, TokensPerMinute: cfg.LLM.TPM, Latency: cfg.LLM.Latency})
	if err != nil {
		t.Fatal(err)
	}
	mock, err := mockprovider.Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Close()
	cfg.LLM.Provider, cfg.LLM.Keys, cfg.LLM.ProviderStats = mock.URL+"/v1", keys, true
	r, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	lr := r.LLM
	if !r.Accounting.OK || lr.ProviderStats == nil || lr.Mock {
		t.Fatalf("accounting %v, stats %v, mock %v: %+v", r.Accounting.OK, lr.ProviderStats, lr.Mock, r.Accounting.Checks)
	}
	if got, want := lr.ProviderStats.Total.Served, int64(lr.Calls.Served); got != want {
		t.Fatalf("the provider served %d, the client %d", got, want)
	}
	var b bytes.Buffer
	if err := writeLLMText(&b, lr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "The provider's view") {
		t.Fatalf("no provider's view:\n%s", b.String())
	}
}
