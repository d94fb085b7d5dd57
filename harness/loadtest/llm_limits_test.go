package loadtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/crsched/crs/scheduler"
)

func TestAnswersGiveTheProvidersLimitsOpenAIsAndAnthropics(t *testing.T) {
	h := http.Header{}
	h.Set("x-ratelimit-limit-tokens", "20000")
	h.Set("x-ratelimit-remaining-tokens", "1234")
	h.Set("x-ratelimit-reset-tokens", "6s")
	h.Set("anthropic-ratelimit-requests-limit", "50")
	h.Set("anthropic-ratelimit-requests-remaining", "49")
	got := rateHeaders(h)
	if got["tokens"] != (Remaining{Units: 1234, Reset: 6 * time.Second, Limit: 20000}) {
		t.Fatalf("tokens %+v", got["tokens"])
	}
	if r := got["requests"]; r.Units != 49 || r.Limit != 50 {
		t.Fatalf("requests %+v", r)
	}
	h = http.Header{}
	h.Set("x-ratelimit-limit-tokens", "20000")
	if r := rateHeaders(h)["tokens"]; r.Units != -1 || r.Limit != 20000 {
		t.Fatalf("a limit without a remaining figure: %+v", r)
	}
}

// A limit the provider states other than the client's becomes the key's.
func TestTheCRSClientLearnsTheProvidersLimit(t *testing.T) {
	c := crsTestClient(t) // 1000 tpm
	h, err := c.Pick(context.Background(), LLMCall{Prompt: 10, MaxTokens: 10, Estimate: 20})
	if err != nil {
		t.Fatal(err)
	}
	a := LLMAnswer{Status: 200, Remaining: map[string]Remaining{"tokens": {Units: 480, Limit: 500}}}
	a.Usage.Total = 20
	if err := h.Served(a); err != nil {
		t.Fatal(err)
	}
	var max int64
	c.s.Budgets(func(_ string, b scheduler.Budget) bool {
		if b.Limit == "tokens" {
			max = b.Max
		}
		return true
	})
	if left := remainingOf(t, c); max != 500 || left["tokens"] != 480 {
		t.Fatalf("Max %d, %d left; want the provider's 500 and 480", max, left["tokens"])
	}
}
