package loadtest

import (
	"context"
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
