package loadtest

import (
	"context"
	"io"
	"testing"
)

// A call that spent more than its estimate (a prompt the client counted
// short) is charged the overrun by a provider that settles to the usage,
// and that provider's remaining already says so. Observing that figure
// and then settling the overrun takes it twice.
func TestAnOverrunTheProviderCountedIsTakenOnce(t *testing.T) {
	c := crsTestClient(t)
	h, err := c.Pick(context.Background(), LLMCall{Prompt: 50, MaxTokens: 50, Estimate: 100})
	if err != nil {
		t.Fatal(err)
	}
	// The provider charged the usage, 150, from its full 1000.
	a := LLMAnswer{Status: 200, Remaining: map[string]Remaining{"tokens": {Units: 850}, "requests": {Units: 59}}}
	a.Usage.Total = 150
	if err := h.Served(a); err != nil {
		t.Fatal(err)
	}
	if left := remainingOf(t, c); left["tokens"] != 850 {
		t.Errorf("the bucket holds %d tokens, the provider said 850", left["tokens"])
	}
}

// The endpoint keeps a query or a fragment out of the path; a base URL
// ends in one /v1 or none.
func TestTheProviderURLsPathIsTheEndpointsWhateverFollowsIt(t *testing.T) {
	for base, want := range map[string]string{
		"http://h/v1?api-version=1": "http://h/v1/chat/completions?api-version=1",
		"http://h//":                "http://h/v1/chat/completions",
		"http://h/v1//":             "http://h/v1/chat/completions",
	} {
		if got := newLLMHTTP(base, "m", 1).endpoint; got != want {
			t.Errorf("-provider %s: calls go to %s, want %s", base, got, want)
		}
	}
}

// -provider-latency is the in-process mock's: with -provider nothing
// reads it, and the scenario refuses the flags it does not read.
func TestProviderLatencyWithAProviderIsRefused(t *testing.T) {
	_, err := ParseFlags([]string{"-scenario", "llm", "-provider", "http://127.0.0.1:1", "-keys", "a", "-provider-latency", "fixed:1s"}, io.Discard)
	if err == nil {
		t.Error("-provider-latency, which only the in-process mock reads, accepted with -provider")
	}
}
