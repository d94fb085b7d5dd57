package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/harness/mockprovider"
	"github.com/crsched/crs/internal/fakeclock"
)

// gateway serves a Gateway with keys in front of upstream, on loopback.
// The scheduler's clock is clk, which the test alone moves.
func gateway(t *testing.T, upstream string, keys []Key, clk *fakeclock.Clock) (*Gateway, string) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGateway(u, keys, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.Close()
		g.Close()
	})
	return g, srv.URL
}

// mock starts the mock provider on loopback, on clk's time, so that its
// buckets refill only when the test says.
func mock(t *testing.T, cfg mockprovider.Config, clk *fakeclock.Clock) *mockprovider.Server {
	t.Helper()
	cfg.Now = clk.Now
	p, err := mockprovider.New(cfg)
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

const chatBody = `{"model": "m", "messages": [{"role": "user", "content": "four score and seven years ago"}], "max_tokens": 40}`

// post sends a chat call to the gateway, without a key of its own.
func post(t *testing.T, gatewayURL, body string) (*http.Response, []byte) {
	t.Helper()
	// A bound, so that a call the gateway wrongly keeps waiting fails the
	// test instead of hanging it.
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Post(gatewayURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestACallGoesOutWithAKeyOfTheGatewaysAndComesBackUnchanged(t *testing.T) {
	clk := fakeclock.New()
	m := mock(t, mockprovider.Config{Keys: []string{"sk-a", "sk-b"}, RequestsPerMinute: 60, TokensPerMinute: 1000}, clk)
	g, url := gateway(t, m.URL, []Key{{Name: "a", Secret: "sk-a", RPM: 60, TPM: 1000}, {Name: "b", Secret: "sk-b", RPM: 60, TPM: 1000}}, clk)

	resp, body := post(t, url, chatBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var answer mockprovider.ChatResponse
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatal(err)
	}
	st := m.Stats()
	if st.Unauthorized != 0 || st.Total.Served != 1 || answer.Usage.TotalTokens != st.Total.TotalTokens {
		t.Fatalf("mock: %d unauthorized, %d served, %d tokens; the caller saw usage %+v",
			st.Unauthorized, st.Total.Served, st.Total.TotalTokens, answer.Usage)
	}
	if h := g.sched.Stats().Holders; h != 0 {
		t.Fatalf("%d leases still held after the answer", h)
	}
}

func TestTheLeaseIsSettledToTheCallsUsage(t *testing.T) {
	clk := fakeclock.New()
	m := mock(t, mockprovider.Config{Keys: []string{"sk-a", "sk-b"}, RequestsPerMinute: 60, TokensPerMinute: 1000}, clk)
	g, url := gateway(t, m.URL, []Key{{Name: "a", Secret: "sk-a", RPM: 60, TPM: 1000}, {Name: "b", Secret: "sk-b", RPM: 60, TPM: 1000}}, clk)

	for i := 0; i < 3; i++ {
		if resp, body := post(t, url, chatBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	// The clock has not moved, so the buckets hold exactly what the
	// calls left: a whole limit less their usage, not their estimates.
	var spent, calls int64
	for _, name := range []string{"a", "b"} {
		left, err := g.sched.Remaining(name)
		if err != nil {
			t.Fatal(err)
		}
		spent += 1000 - left["tokens"]
		calls += 60 - left["requests"]
	}
	if st := m.Stats(); spent != st.Total.TotalTokens || calls != 3 {
		t.Fatalf("the buckets lost %d tokens and %d requests; the mock served 3 calls of %d tokens", spent, calls, st.Total.TotalTokens)
	}
}

func TestTheProvidersRemainingLowersTheKeysBudget(t *testing.T) {
	clk := fakeclock.New()
	// The mock allows one call a minute, the gateway believes in a
	// hundred: the answer's x-ratelimit-remaining-requests corrects it.
	m := mock(t, mockprovider.Config{Keys: []string{"sk-a"}, RequestsPerMinute: 1}, clk)
	g, url := gateway(t, m.URL, []Key{{Name: "a", Secret: "sk-a", RPM: 100}}, clk)

	if resp, body := post(t, url, chatBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	left, err := g.sched.Remaining("a")
	if err != nil {
		t.Fatal(err)
	}
	if left["requests"] != 0 {
		t.Fatalf("the provider said 0 requests left; the key's bucket has %d", left["requests"])
	}
}

// A 429 rests the key, and the call goes to another key with room; when
// every key refused it, the last 429 reaches the caller.
func TestA429RestsTheKeyForItsRetryAfterAndIsPassedOnWhenNoKeyHasRoom(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Authorization")]++
		mu.Unlock()
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer up.Close()
	g, url := gateway(t, up.URL, []Key{{Name: "a", Secret: "sk-a", RPM: 100}, {Name: "b", Secret: "sk-b", RPM: 100}}, fakeclock.New())

	resp, _ := post(t, url, chatBody)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" {
		t.Fatalf("status %d, Retry-After %q: want the 429 passed on", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The key refused first rests, so the retry went to the other.
	mu.Lock()
	defer mu.Unlock()
	if seen["Bearer sk-a"] != 1 || seen["Bearer sk-b"] != 1 {
		t.Fatalf("calls per key: %v; want one each", seen)
	}
	if st := g.sched.Stats(); st.SuspendedResources != 2 || st.Holders != 0 {
		t.Fatalf("%d keys resting, %d leases held; want 2 and 0", st.SuspendedResources, st.Holders)
	}
}

func TestACallNoKeyCanEverCoverIsRefusedAtOnce(t *testing.T) {
	g, url := gateway(t, "http://127.0.0.1:1", []Key{{Name: "a", Secret: "sk-a", TPM: 100}}, fakeclock.New())
	resp, body := post(t, url, `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 500}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "more tokens than any key") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if h := g.sched.Stats().Holders; h != 0 {
		t.Fatalf("%d leases held", h)
	}
}

func TestAStreamIsPassedOnUntouched(t *testing.T) {
	const stream = "data: {\"choices\": []}\n\ndata: [DONE]\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-a" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	defer up.Close()
	g, url := gateway(t, up.URL, []Key{{Name: "a", Secret: "sk-a", RPM: 60}}, fakeclock.New())

	resp, body := post(t, url, `{"messages": [{"role": "user", "content": "hi"}], "stream": true}`)
	if resp.StatusCode != http.StatusOK || string(body) != stream {
		t.Fatalf("status %d, body %q", resp.StatusCode, body)
	}
	if h := g.sched.Stats().Holders; h != 0 {
		t.Fatalf("%d leases still held after the stream", h)
	}
}

func TestAnUnreachableProviderAnswers502AndFreesTheKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	g, url := gateway(t, gone, []Key{{Name: "a", Secret: "sk-a", RPM: 60}}, fakeclock.New())

	if resp, _ := post(t, url, chatBody); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	if h := g.sched.Stats().Holders; h != 0 {
		t.Fatalf("%d leases still held", h)
	}
}

// The gateway must reserve at least what the provider charges up front,
// or the provider refuses calls the gateway believed covered.
func TestTheEstimateIsWhatTheMockAdmitsACallOn(t *testing.T) {
	for _, body := range []string{
		chatBody,
		`{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "why?"}], "max_tokens": 7}`,
		`{"messages": [{"role": "user", "content": "no max_tokens"}]}`,
	} {
		var req struct {
			Messages  []mockprovider.Message `json:"messages"`
			MaxTokens int64                  `json:"max_tokens"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		want := mockprovider.Estimate(mockprovider.ChatRequest{Messages: req.Messages, MaxTokens: req.MaxTokens}, mockprovider.DefaultMaxTokens)
		if got := estimate([]byte(body), defaultImageTokens); got != want {
			t.Errorf("%s: estimate %d, the mock's %d", body, got, want)
		}
	}
	parts := `{"messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}], "max_tokens": 5}`
	if got := estimate([]byte(parts), defaultImageTokens); got < (int64(len("hello there"))+3)/4+5 {
		t.Errorf("content parts: estimate %d is below the text's", got)
	}
}
