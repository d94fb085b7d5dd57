package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/mockprovider"
	"github.com/crsched/crs/internal/fakeclock"
)

// n completions may each run to max_tokens: a provider reserves them
// all.
func TestAnEstimateCountsEveryCompletionTheCallAsksFor(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int64
	}{
		{`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100, "n": 3}`, 1 + 300},
		{`{"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 100, "n": 2}`, 1 + 200},
		{`{"messages": [{"role": "user", "content": "hi"}], "n": 2}`, 1 + 2*defaultMaxTokens},
		{`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100, "n": 0}`, 1 + 100},
	} {
		if got := estimate([]byte(tc.body), defaultImageTokens); got != tc.want {
			t.Errorf("%s: estimate %d, want %d", tc.body, got, tc.want)
		}
	}
}

// An image costs what the provider counts for it, not the length of its
// URL: each counts as imageTokens, the most one image may cost.
func TestAnImageCountsAsTheMostAnImageCosts(t *testing.T) {
	body := `{"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
		{"type": "image_url", "image_url": {"url": "https://x.example/a.png"}},
		{"type": "image_url", "image_url": {"url": "data:image/png;base64,` + strings.Repeat("A", 4000) + `"}}]}], "max_tokens": 5}`
	if got, want := estimate([]byte(body), 1000), int64((len("what is this?")+3)/4+2*1000+5); got != want {
		t.Errorf("estimate %d, want the text's tokens, 1000 per image and max_tokens: %d", got, want)
	}
}

// n so large that the estimate would overflow is a call no key covers.
func TestAnEstimateTooLargeForAnyKeyIsRefusedAtOnce(t *testing.T) {
	clk := fakeclock.New()
	m := mock(t, mockprovider.Config{Keys: []string{"sk-a"}, TokensPerMinute: 1000}, clk)
	_, url := gateway(t, m.URL, []Key{{Name: "a", Secret: "sk-a", TPM: 1000}}, clk)
	resp, body := post(t, url, `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4294967296, "n": 4611686018427387904}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

// A provider that keeps the estimate charged says so in its remaining
// tokens: the refund the gateway settles must not serve a call waiting
// for a key before that figure lowers the bucket.
func TestARefundTheProviderKeptServesNoWaitingCall(t *testing.T) {
	clk := fakeclock.New()
	release := make(chan struct{})
	cfg := mockprovider.Config{Keys: []string{"sk-a"}, TokensPerMinute: 1000, KeepEstimate: true,
		Completion: func(int64) int64 { return 10 },
		Latency:    mockprovider.Latency{Min: time.Second, Max: time.Second},
		Sleep: func(ctx context.Context, _ time.Duration) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}}
	m := mock(t, cfg, clk)
	g, url := gateway(t, m.URL, []Key{{Name: "a", Secret: "sk-a", TPM: 1000}}, clk)

	first := `{"messages": [{"role": "user", "content": "` + strings.Repeat("x", 400) + `"}], "max_tokens": 500}` // 600 tokens
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, url, first)
		done <- resp.StatusCode
	}()
	for g.sched.Stats().Holders != 1 {
		time.Sleep(time.Millisecond) // the first call is on its way
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	second := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions",
			strings.NewReader(`{"messages": [{"role": "user", "content": "`+strings.Repeat("x", 400)+`"}], "max_tokens": 400}`)) // 500 tokens
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		second <- err
	}()
	for g.sched.Stats().Waiters != 1 {
		time.Sleep(time.Millisecond) // the second waits: 400 tokens left
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("first call: status %d", code)
	}
	// The provider kept the 600: it has 400 left, not enough for the
	// second call, which must still wait.
	if st := g.sched.Stats(); st.Holders != 0 || st.Waiters != 1 {
		t.Errorf("after the first answer: %d holders, %d waiters; want the second call still waiting", st.Holders, st.Waiters)
	}
	if left, _ := g.sched.Remaining("a"); left["tokens"] != 400 {
		t.Errorf("the bucket holds %d tokens, the provider said 400", left["tokens"])
	}
	cancel()
	<-second
}

// Each message's estimate saturates at config.MaxUnits; their sum must
// too, or enough of them wrap around to a tiny estimate.
func TestAnEstimateOfManyMessagesDoesNotWrapAround(t *testing.T) {
	msg := `{"role": "user", "content": [{"type": "image"}]}`
	body := `{"messages": [` + strings.TrimSuffix(strings.Repeat(msg+",", 1025), ",") + `], "max_tokens": 1}`
	if got := estimate([]byte(body), config.MaxUnits); got != config.MaxUnits {
		t.Errorf("1025 images of MaxUnits each: estimate %d, want config.MaxUnits", got)
	}
}

// The gateway proxies any path, and its doc reads the usage of
// completions too: a prompt outside "messages" (a completions "prompt",
// an embeddings or responses "input", a chat call's "tools") is text the
// provider counts before running the call, so the estimate must count it.
func TestAnEstimateCountsThePromptOutsideMessages(t *testing.T) {
	text := strings.Repeat("x", 4000) // 1000 tokens by the gateway's rule
	for _, body := range []string{
		`{"prompt": "` + text + `", "max_tokens": 10}`,
		`{"input": "` + text + `", "max_output_tokens": 10}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "tools": [{"type": "function", "function": {"name": "f", "description": "` + text + `"}}]}`,
	} {
		if got := estimate([]byte(body), defaultImageTokens); got < 1000 {
			t.Errorf("%.60s...: estimate %d, below the 1000 tokens of its text", body, got)
		}
	}
}
