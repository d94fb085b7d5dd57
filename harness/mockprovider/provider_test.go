package mockprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/internal/fakeclock"
)

// harness is a Provider behind an httptest server on loopback, with a
// clock that moves only when the test advances it.
type harness struct {
	p     *Provider
	clock *fakeclock.Clock
	srv   *httptest.Server
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	clock := fakeclock.New()
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	if len(cfg.Keys) == 0 {
		cfg.Keys = []string{"k1", "k2"}
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return &harness{p: p, clock: clock, srv: srv}
}

// result is a response read in full.
type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) errorType() string {
	var e struct {
		Error struct{ Type, Message string }
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Type
}

func (h *harness) post(t *testing.T, key string, body any) result {
	t.Helper()
	var buf []byte
	switch b := body.(type) {
	case string:
		buf = []byte(b)
	default:
		var err error
		if buf, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/chat/completions", bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req)
}

func do(t *testing.T, req *http.Request) result {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return result{resp.StatusCode, resp.Header, body}
}

// call is a request of prompt tokens (4 bytes each) allowing maxTokens.
func call(prompt int, maxTokens int64) ChatRequest {
	return ChatRequest{
		Model:     "gpt-test",
		Messages:  []Message{{Role: "user", Content: strings.Repeat("abcd", prompt)}},
		MaxTokens: maxTokens,
	}
}

func fixed(n int64) func(int64) int64 { return func(int64) int64 { return n } }

func wantHeaders(t *testing.T, r result, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := r.header.Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
}

func TestServedCallAnswersInOpenAIFormat(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 600, TokensPerMinute: 40000, Completion: fixed(40)})
	r := h.post(t, "k1", ChatRequest{
		Model:     "gpt-test",
		Messages:  []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello world!"}},
		MaxTokens: 100,
	})
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var resp struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int64 `json:"usage"`
	}
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || resp.Model != "gpt-test" || !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Created != h.clock.Now().Unix() {
		t.Errorf("envelope %+v", resp)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Role != "assistant" || resp.Choices[0].FinishReason != "stop" || resp.Choices[0].Message.Content == "" {
		t.Errorf("choices %+v", resp.Choices)
	}
	// "be brief" is 2 tokens, "hello world!" 3, by the bytes/4 rule.
	if want := map[string]int64{"prompt_tokens": 5, "completion_tokens": 40, "total_tokens": 45}; !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage %v, want %v", resp.Usage, want)
	}
	// 600 rpm refill one request per 100 ms; 45 tokens at 40,000 per
	// minute take 67.5 ms to refill, shown rounded up.
	wantHeaders(t, r, map[string]string{
		"x-ratelimit-limit-requests":     "600",
		"x-ratelimit-remaining-requests": "599",
		"x-ratelimit-reset-requests":     "100ms",
		"x-ratelimit-limit-tokens":       "40000",
		"x-ratelimit-remaining-tokens":   "39955",
		"x-ratelimit-reset-tokens":       "68ms",
		"Content-Type":                   "application/json",
	})
	if r.header.Get("Retry-After") != "" {
		t.Error("a served call carries Retry-After")
	}
}

func TestLengthFinishWhenTheCompletionUsesMaxTokens(t *testing.T) {
	h := newHarness(t, Config{Completion: fixed(7)})
	var resp ChatResponse
	r := h.post(t, "k1", call(1, 7))
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "length" || resp.Usage.CompletionTokens != 7 {
		t.Fatalf("finish %q, usage %+v", resp.Choices[0].FinishReason, resp.Usage)
	}
}

func TestUnknownOrMissingKeyIsUnauthorized(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 1})
	for _, key := range []string{"", "nope", "k1x"} {
		r := h.post(t, key, call(1, 1))
		if r.status != http.StatusUnauthorized || r.errorType() != "invalid_request_error" {
			t.Errorf("key %q: status %d, %s", key, r.status, r.body)
		}
		if r.header.Get("x-ratelimit-limit-requests") != "" {
			t.Errorf("key %q: a 401 carries a key's limit headers", key)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/chat/completions", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Basic k1") // the key, but not as a bearer token
	if r := do(t, req); r.status != http.StatusUnauthorized {
		t.Errorf("Basic auth: status %d", r.status)
	}
	s := h.p.Stats()
	if s.Unauthorized != 4 || s.Total.Received != 0 {
		t.Fatalf("Unauthorized %d, Received %d, want 4, 0", s.Unauthorized, s.Total.Received)
	}
	// The refused calls spent nothing of k1's budget.
	if r := h.post(t, "k1", call(1, 1)); r.status != http.StatusOK {
		t.Fatalf("k1 after the 401s: status %d", r.status)
	}
}

// 3 requests per minute: the 4th is refused until 20 s have refilled one,
// and not a nanosecond earlier; Retry-After says so, rounded up.
func TestRequestsLimitRefusesExactlyWhenTheBucketIsEmpty(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 3})
	for i := 0; i < 3; i++ {
		if r := h.post(t, "k1", call(1, 10)); r.status != http.StatusOK {
			t.Fatalf("call %d: status %d", i, r.status)
		}
	}
	r := h.post(t, "k1", call(1, 10))
	if r.status != http.StatusTooManyRequests || r.errorType() != "requests" {
		t.Fatalf("4th call: status %d, %s", r.status, r.body)
	}
	wantHeaders(t, r, map[string]string{
		"Retry-After":                    "20",
		"retry-after-ms":                 "20000",
		"x-ratelimit-remaining-requests": "0",
		"x-ratelimit-reset-requests":     "1m0s",
	})
	if r.header.Get("x-ratelimit-limit-tokens") != "" {
		t.Error("tokens headers without a tokens limit")
	}
	// Another key has its own bucket.
	if r := h.post(t, "k2", call(1, 10)); r.status != http.StatusOK {
		t.Fatalf("k2: status %d", r.status)
	}
	h.clock.Advance(20*time.Second - 1)
	r = h.post(t, "k1", call(1, 10))
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("a nanosecond early: status %d", r.status)
	}
	wantHeaders(t, r, map[string]string{"Retry-After": "1", "retry-after-ms": "1"})
	h.clock.Advance(1)
	if r := h.post(t, "k1", call(1, 10)); r.status != http.StatusOK {
		t.Fatalf("after 20 s: status %d", r.status)
	}
	s := h.p.Stats().Keys[0]
	if s.Received != 6 || s.Served != 4 || s.RateLimited != 2 || s.TooLarge != 0 {
		t.Fatalf("k1 stats %+v", s)
	}
}

// The tokens bucket is checked and charged with prompt + max_tokens, then
// settled to the usage when the call ends.
func TestTokensLimitChargesTheEstimateThenSettlesToUsage(t *testing.T) {
	h := newHarness(t, Config{TokensPerMinute: 1000, Completion: fixed(10)})
	r := h.post(t, "k1", call(1, 600)) // estimate 601, usage 11
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "989"})
	if r := h.post(t, "k1", call(1, 600)); r.status != http.StatusOK {
		t.Fatalf("second call, 978 left after it: status %d", r.status)
	}
	s := h.p.Stats().Keys[0]
	if s.TotalTokens != 22 || s.TokensCharged != 22 || s.PromptTokens != 2 || s.CompletionTokens != 20 {
		t.Fatalf("stats %+v", s)
	}
}

func TestKeepEstimateChargesPromptPlusMaxTokens(t *testing.T) {
	h := newHarness(t, Config{TokensPerMinute: 1000, Completion: fixed(10), KeepEstimate: true})
	r := h.post(t, "k1", call(1, 600))
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "399"})
	r = h.post(t, "k1", call(1, 600))
	if r.status != http.StatusTooManyRequests || r.errorType() != "tokens" {
		t.Fatalf("status %d, %s", r.status, r.body)
	}
	// 202 tokens short at 1000 per minute: 12.12 s.
	wantHeaders(t, r, map[string]string{"retry-after-ms": "12120", "Retry-After": "13", "x-ratelimit-remaining-tokens": "399"})
	h.clock.Advance(12120 * time.Millisecond)
	if r := h.post(t, "k1", call(1, 600)); r.status != http.StatusOK {
		t.Fatalf("after retry-after-ms: status %d", r.status)
	}
	if s := h.p.Stats().Keys[0]; s.TokensCharged != 1202 || s.TotalTokens != 22 {
		t.Fatalf("stats %+v", s)
	}
}

// While a call runs, its whole estimate is held: a second call that the
// estimate leaves no room for is refused, and fits once the first has
// settled.
func TestEstimateIsHeldWhileTheCallRuns(t *testing.T) {
	inCall, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cfg := Config{TokensPerMinute: 1000, Completion: fixed(10), Latency: Latency{Min: time.Second, Max: time.Second}}
	cfg.Sleep = func(ctx context.Context, d time.Duration) {
		once.Do(func() {
			close(inCall)
			<-release
		})
	}
	h := newHarness(t, cfg)
	first := make(chan result)
	go func() { first <- h.post(t, "k1", call(1, 600)) }()
	<-inCall
	r := h.post(t, "k1", call(1, 600))
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("second call while the first holds 601: status %d", r.status)
	}
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "399"})
	close(release)
	if r := <-first; r.status != http.StatusOK {
		t.Fatalf("first call: status %d", r.status)
	}
	if r := h.post(t, "k1", call(1, 600)); r.status != http.StatusOK {
		t.Fatalf("after the first settled: status %d", r.status)
	}
}

func TestEstimateAboveTheTokensLimitIsTooLarge(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 10, TokensPerMinute: 100})
	r := h.post(t, "k1", call(1, 100)) // 101 > 100
	if r.status != http.StatusTooManyRequests || r.errorType() != "tokens" {
		t.Fatalf("status %d, %s", r.status, r.body)
	}
	if r.header.Get("Retry-After") != "" || r.header.Get("retry-after-ms") != "" {
		t.Fatal("Retry-After on a call that waiting cannot cure")
	}
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "100", "x-ratelimit-remaining-requests": "10"})
	if s := h.p.Stats().Keys[0]; s.TooLarge != 1 || s.RateLimited != 1 {
		t.Fatalf("stats %+v", s)
	}
	if r := h.post(t, "k1", call(1, 99)); r.status != http.StatusOK {
		t.Fatalf("a call of exactly the limit: status %d", r.status)
	}
}

func TestBadRequestsAreRefusedAndChargeNothing(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 5, TokensPerMinute: 1000})
	bodies := []string{
		`not json`,
		`{"messages": []}`,
		`{"model": "m"}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": -5}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 9223372036854775807}`,
		`{"messages": [{"role": "user", "content": 42}]}`,
	}
	for _, b := range bodies {
		r := h.post(t, "k1", b)
		if r.status != http.StatusBadRequest || r.errorType() != "invalid_request_error" {
			t.Errorf("%s: status %d, %s", b, r.status, r.body)
		}
		wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-requests": "5", "x-ratelimit-remaining-tokens": "1000"})
	}
	if s := h.p.Stats().Keys[0]; s.BadRequests != int64(len(bodies)) || s.Received != int64(len(bodies)) || s.Served != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// Clients send content as an array of parts, and the newer
// max_completion_tokens; a request with neither max gets the default.
func TestRequestVariants(t *testing.T) {
	var got []int64
	h := newHarness(t, Config{DefaultMaxTokens: 50, Completion: func(mt int64) int64 { got = append(got, mt); return 1 }})
	var resp ChatResponse
	r := h.post(t, "k1", `{"messages": [{"role": "user", "content": [{"type": "text", "text": "abcdefgh"}, {"type": "image_url"}]}], "max_completion_tokens": 9}`)
	if err := json.Unmarshal(r.body, &resp); err != nil || resp.Usage.PromptTokens != 2 {
		t.Fatalf("parts: %v, %s", err, r.body)
	}
	h.post(t, "k1", `{"messages": [{"role": "user", "content": "x"}]}`)
	h.p.Stats() // takes the lock the hook ran under: its writes are visible
	if !reflect.DeepEqual(got, []int64{9, 50}) {
		t.Fatalf("max tokens seen %v, want [9 50]", got)
	}
	if got := Estimate(ChatRequest{Messages: []Message{{Content: "x"}}}, 50); got != 51 {
		t.Fatalf("Estimate = %d, want 51", got)
	}
}

func TestRoutes(t *testing.T) {
	h := newHarness(t, Config{})
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/v1/chat/completions", nil)
	if r := do(t, req); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET completions: status %d", r.status)
	}
	req, _ = http.NewRequest(http.MethodPost, h.srv.URL+"/v1/embeddings", nil)
	if r := do(t, req); r.status != http.StatusNotFound {
		t.Errorf("unknown path: status %d", r.status)
	}
}

// The budget allowed is a full bucket plus the refill over the time since
// New; GET /stats gives what Stats gives.
func TestStatsReportTheBudgetAllowed(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 600, TokensPerMinute: 40000, Completion: fixed(99)})
	h.post(t, "k1", call(1, 100))
	h.post(t, "k2", call(1, 100))
	h.post(t, "nope", call(1, 100))
	h.clock.Advance(90 * time.Second)
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/stats", nil)
	r := do(t, req)
	var got Stats
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	want := h.p.Stats()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("/stats %+v\nStats() %+v", got, want)
	}
	k := want.Keys[0]
	if k.Key != "k1" || k.RequestsAllowed != 600+900 || k.TokensAllowed != 40000+60000 || k.TotalTokens != 100 {
		t.Fatalf("k1 %+v", k)
	}
	if want.Elapsed != 90*time.Second || want.Unauthorized != 1 || want.Total.Served != 2 || want.Total.TokensAllowed != 200000 {
		t.Fatalf("stats %+v", want)
	}
}

func TestLatencyIsDrawnAndWaitedOut(t *testing.T) {
	var mu sync.Mutex
	var slept []time.Duration
	record := func(_ context.Context, d time.Duration) {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
	}
	h := newHarness(t, Config{Latency: Latency{Min: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Sleep: record, Seed: 3})
	for i := 0; i < 50; i++ {
		h.post(t, "k1", call(1, 5))
	}
	mu.Lock()
	defer mu.Unlock()
	distinct := map[time.Duration]bool{}
	for _, d := range slept {
		if d < 10*time.Millisecond || d > 20*time.Millisecond {
			t.Fatalf("latency %v outside [10ms, 20ms]", d)
		}
		distinct[d] = true
	}
	if len(slept) != 50 || len(distinct) < 10 {
		t.Fatalf("%d latencies, %d distinct", len(slept), len(distinct))
	}
	slept = nil
	mu.Unlock()
	h2 := newHarness(t, Config{Latency: Latency{Min: time.Second, Max: time.Second}, Sleep: record})
	h2.post(t, "k1", call(1, 5))
	mu.Lock()
	if len(slept) != 1 || slept[0] != time.Second {
		t.Fatalf("fixed latency slept %v", slept)
	}
}

// Concurrent calls on a frozen clock: exactly the bucket's worth are
// served, whatever the interleaving.
func TestConcurrentCallsNeverOverdrawTheBuckets(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 40, TokensPerMinute: 100000, Completion: fixed(1)})
	const calls = 120
	statuses := make(chan int, calls)
	var wg sync.WaitGroup
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- h.post(t, "k1", call(1, 10)).status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[http.StatusOK] != 40 || count[http.StatusTooManyRequests] != 80 {
		t.Fatalf("statuses %v, want 40 OK and 80 429", count)
	}
	if s := h.p.Stats().Keys[0]; s.Served != 40 || s.RateLimited != 80 || s.TotalTokens != 80 {
		t.Fatalf("stats %+v", s)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no keys":            {},
		"empty key":          {Keys: []string{""}},
		"key with a space":   {Keys: []string{"a b"}},
		"duplicate key":      {Keys: []string{"a", "a"}},
		"negative rpm":       {Keys: []string{"a"}, RequestsPerMinute: -1},
		"tpm too large":      {Keys: []string{"a"}, TokensPerMinute: maxPerMinute + 1},
		"negative max":       {Keys: []string{"a"}, DefaultMaxTokens: -1},
		"latency min > max":  {Keys: []string{"a"}, Latency: Latency{Min: 2, Max: 1}},
		"negative latency":   {Keys: []string{"a"}, Latency: Latency{Min: -1, Max: 1}},
		"huge default max":   {Keys: []string{"a"}, DefaultMaxTokens: maxMaxTokens + 1},
		"negative tpm limit": {Keys: []string{"a"}, TokensPerMinute: -40000},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := New(Config{Keys: []string{"a"}, RequestsPerMinute: maxPerMinute, TokensPerMinute: maxPerMinute}); err != nil {
		t.Errorf("largest limits: %v", err)
	}
}

func TestParseLatency(t *testing.T) {
	for s, want := range map[string]Latency{
		"fixed:0":            {},
		"fixed:150ms":        {150 * time.Millisecond, 150 * time.Millisecond},
		"uniform:20ms-500ms": {20 * time.Millisecond, 500 * time.Millisecond},
	} {
		got, err := ParseLatency(s)
		if err != nil || got != want {
			t.Errorf("ParseLatency(%q) = %v, %v, want %v", s, got, err, want)
		}
		if back, _ := ParseLatency(got.String()); back != got {
			t.Errorf("%v.String() = %q does not read back", got, got.String())
		}
	}
	for _, s := range []string{"", "10ms", "fixed:-1s", "uniform:5s-1s", "uniform:1s", "exp:1s", "fixed:x"} {
		if _, err := ParseLatency(s); err == nil {
			t.Errorf("ParseLatency(%q) succeeded", s)
		}
	}
}

func TestFormatResetRoundsUpToTheMillisecond(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                    "0s",
		-time.Second:                         "0s",
		1:                                    "1ms",
		12 * time.Millisecond:                "12ms",
		1500 * time.Millisecond:              "1.5s",
		6 * time.Minute:                      "6m0s",
		time.Second + time.Nanosecond:        "1.001s",
		7*time.Second + 660*time.Millisecond: "7.66s",
	} {
		if got := FormatReset(d); got != want {
			t.Errorf("FormatReset(%v) = %q, want %q", d, got, want)
		}
	}
}

// The headers of a 400 give the buckets as they stand when it is
// answered, refilled since the last call, like those of any answer.
func TestBadRequestHeadersShowTheRefilledBuckets(t *testing.T) {
	h := newHarness(t, Config{RequestsPerMinute: 60})
	h.post(t, "k1", call(1, 5))
	h.clock.Advance(time.Second) // refills the request taken
	r := h.post(t, "k1", `{"messages": []}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d", r.status)
	}
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-requests": "60", "x-ratelimit-reset-requests": "0s"})
}

func TestPromptTokensRoundsEachMessageUp(t *testing.T) {
	for _, tt := range []struct {
		contents []string
		want     int64
	}{
		{nil, 1},
		{[]string{""}, 1},
		{[]string{"x"}, 1},
		{[]string{"hello"}, 2},
		{[]string{"abcd", "abcde", "a"}, 1 + 2 + 1},
	} {
		var msgs []Message
		for _, c := range tt.contents {
			msgs = append(msgs, Message{Role: "user", Content: c})
		}
		if got := PromptTokens(msgs); got != tt.want {
			t.Errorf("PromptTokens(%q) = %d, want %d", tt.contents, got, tt.want)
		}
	}
}

// When both buckets are short, Retry-After is the longer of the two
// waits: only then does the call fit.
func TestRetryAfterIsTheLongerWaitWhenBothBucketsAreShort(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rpm   int64
		first int // calls of 500 tokens (1 + 499) before the one refused
	}{
		// 1 rpm: the request is 60 s away, the 500 tokens missing 30 s.
		{"requests wait longer", 1, 1},
		// 2 rpm: the request is 30 s away, the 1000 tokens missing 60 s.
		{"tokens wait longer", 2, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{RequestsPerMinute: tt.rpm, TokensPerMinute: 1000, Completion: fixed(499), KeepEstimate: true})
			for i := 0; i < tt.first; i++ {
				if r := h.post(t, "k1", call(1, 499)); r.status != http.StatusOK {
					t.Fatalf("call %d: status %d", i, r.status)
				}
			}
			r := h.post(t, "k1", call(1, 999)) // needs the tokens bucket full
			if r.status != http.StatusTooManyRequests || r.errorType() != "requests" {
				t.Fatalf("status %d, %s", r.status, r.body)
			}
			wantHeaders(t, r, map[string]string{"retry-after-ms": "60000", "Retry-After": "60"})
		})
	}
}

// A dead key answers 500 to every call and is charged nothing; the other
// keys serve as before.
func TestAFailingKeyAnswers500AndIsChargedNothing(t *testing.T) {
	h := newHarness(t, Config{TokensPerMinute: 1000, FailKeys: []string{"k2"}})
	for i := 0; i < 3; i++ {
		if r := h.post(t, "k2", call(10, 10)); r.status != http.StatusInternalServerError || r.errorType() != "server_error" {
			t.Fatalf("dead key: status %d, %s", r.status, r.body)
		}
	}
	if r := h.post(t, "k1", call(10, 10)); r.status != http.StatusOK {
		t.Fatalf("live key: status %d", r.status)
	}
	s := h.p.Stats()
	if k := s.Keys[1]; k.Received != 3 || k.ServerErrors != 3 || k.Served != 0 || k.TokensCharged != 0 {
		t.Fatalf("dead key's stats %+v", k)
	}
	if s.Total.ServerErrors != 3 || s.Keys[0].Served != 1 {
		t.Fatalf("total %+v", s.Total)
	}
	if _, err := New(Config{Keys: []string{"k1"}, FailKeys: []string{"k9"}}); err == nil {
		t.Fatal("a failing key that is not a key was accepted")
	}
}

// A provider whose tokenizer counts a prompt otherwise admits and
// charges the call on its own count.
func TestAPromptFactorCountsThePromptOtherwise(t *testing.T) {
	h := newHarness(t, Config{TokensPerMinute: 1000, Completion: fixed(10), PromptFactor: 1.5})
	r := h.post(t, "k1", call(100, 600)) // the provider's prompt: 150
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	var resp ChatResponse
	if err := json.Unmarshal(r.body, &resp); err != nil || resp.Usage.PromptTokens != 150 || resp.Usage.TotalTokens != 160 {
		t.Fatalf("usage %+v, %v", resp.Usage, err)
	}
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "840"})
	// 840 left: 100 prompt tokens by the client's count are 150, plus
	// 700 is 850, which does not fit.
	if r := h.post(t, "k1", call(100, 700)); r.status != http.StatusTooManyRequests {
		t.Fatalf("a call of 850 by the provider's count with 840 left: status %d", r.status)
	}
}

// ReportBeforeRefund shows the figures as they stood before the call's
// refund: the next answer shows the refund.
func TestReportBeforeRefundShowsTheRefundOnlyLater(t *testing.T) {
	h := newHarness(t, Config{TokensPerMinute: 1000, Completion: fixed(10), ReportBeforeRefund: true})
	r := h.post(t, "k1", call(1, 600)) // estimate 601, usage 11
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "399"})
	r = h.post(t, "k1", call(1, 100)) // 989 left, then 101 charged
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "888"})
}

// A limit changed at run time takes effect at its time: the bucket is
// cut to its new size and the answers say so.
func TestALimitChangesAtItsTime(t *testing.T) {
	h := newHarness(t, Config{TokensPerMinute: 1000, Completion: fixed(10),
		Change: LimitChange{At: 30 * time.Second, TokensPerMinute: 500}})
	r := h.post(t, "k1", call(1, 100))
	wantHeaders(t, r, map[string]string{"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "989"})
	h.clock.Advance(30 * time.Second)
	r = h.post(t, "k1", call(1, 100))
	wantHeaders(t, r, map[string]string{"x-ratelimit-limit-tokens": "500", "x-ratelimit-remaining-tokens": "489"})
	s := h.p.Stats()
	// 1000, 500 refilled in 30 s at 1000 a minute; after that at 500.
	if s.TokensPerMinute != 500 || s.Keys[0].TokensAllowed != 1500 {
		t.Fatalf("limit %d, allowed %d", s.TokensPerMinute, s.Keys[0].TokensAllowed)
	}
	h.clock.Advance(30 * time.Second)
	if got := h.p.Stats().Keys[0].TokensAllowed; got != 1750 {
		t.Fatalf("allowed %d after 30 s more at 500 a minute, want 1750", got)
	}
}

// A call waits its admission lag before the buckets see it: a call whose
// lag outlasts the refill a later call needs is admitted after it.
func TestAdmissionLagDelaysTheBucketsCheck(t *testing.T) {
	var h *harness
	var lags []time.Duration
	sleep := func(_ context.Context, d time.Duration) {
		lags = append(lags, d)
		h.clock.Advance(d) // the wait, on the provider's clock
	}
	h = newHarness(t, Config{TokensPerMinute: 60, Completion: fixed(0), Sleep: sleep,
		AdmissionLag: Latency{Min: 30 * time.Second, Max: 30 * time.Second}})
	r := h.post(t, "k1", call(1, 59)) // 60 at admission, 30 s after its arrival; 59 refunded
	if r.status != http.StatusOK || len(lags) != 2 || lags[0] != 30*time.Second {
		t.Fatalf("status %d, waits %v", r.status, lags)
	}
	// Its bucket left full 30 s after the call arrived: it reports 59,
	// the refund, and not the 30 s of refill before the admission.
	wantHeaders(t, r, map[string]string{"x-ratelimit-remaining-tokens": "59"})
}

func TestOmitResetsLeavesTheResetHeadersOut(t *testing.T) {
	h := newHarness(t, Config{TokensPerMinute: 1000, RequestsPerMinute: 10, OmitResets: true})
	r := h.post(t, "k1", call(1, 10))
	if r.header.Get("x-ratelimit-reset-tokens") != "" || r.header.Get("x-ratelimit-reset-requests") != "" || r.header.Get("x-ratelimit-remaining-tokens") == "" {
		t.Fatalf("headers %v", r.header)
	}
}
