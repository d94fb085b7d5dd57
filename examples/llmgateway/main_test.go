package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/internal/mockprovider"
)

// gateway serves a Gateway with keys in front of upstream, on loopback.
// The scheduler's clock is clk, which the test alone moves.
func gateway(t *testing.T, upstream string, keys []Key, clk *fakeclock.Clock) (*Gateway, string) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGateway(u, keys, clk)
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
	resp, err := http.Post(gatewayURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
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

func TestA429RestsTheKeyForItsRetryAfterAndIsPassedOn(t *testing.T) {
	clk := fakeclock.New()
	// The mock allows one call a minute per key, the gateway believes in
	// a hundred: every key's second call is refused.
	m := mock(t, mockprovider.Config{Keys: []string{"sk-a", "sk-b"}, RequestsPerMinute: 1}, clk)
	g, url := gateway(t, m.URL, []Key{{Name: "a", Secret: "sk-a", RPM: 100}, {Name: "b", Secret: "sk-b", RPM: 100}}, clk)

	var statuses []int
	for i := 0; i < 4; i++ {
		resp, _ := post(t, url, chatBody)
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Fatal("the 429 reached the caller without its Retry-After")
		}
	}
	if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 429 || statuses[3] != 429 {
		t.Fatalf("statuses %v, want 200 200 429 429", statuses)
	}
	// The key refused first rests, so the second refusal came from the
	// other key: each was refused once, and both rest now.
	for _, k := range m.Stats().Keys {
		if k.Served != 1 || k.RateLimited != 1 {
			t.Fatalf("key %s: %d served, %d refused; want 1 and 1", k.Key, k.Served, k.RateLimited)
		}
	}
	if st := g.sched.Stats(); st.SuspendedResources != 2 || st.Holders != 0 {
		t.Fatalf("%d keys resting, %d leases held; want 2 and 0", st.SuspendedResources, st.Holders)
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
		if got := estimate([]byte(body)); got != want {
			t.Errorf("%s: estimate %d, the mock's %d", body, got, want)
		}
	}
	parts := `{"messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}], "max_tokens": 5}`
	if got := estimate([]byte(parts)); got < (int64(len("hello there"))+3)/4+5 {
		t.Errorf("content parts: estimate %d is below the text's", got)
	}
}
