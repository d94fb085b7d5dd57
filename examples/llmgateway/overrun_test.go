package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crsched/crs/internal/fakeclock"
)

// A call whose usage exceeds the estimate (a tokenizer that counts more
// than a quarter of the bytes, a tools block the estimate does not read)
// is charged the overrun by a provider that settles to the usage; its
// remaining tokens already say so, and the gateway must take the overrun
// once, not once by Observe and again by Settle.
func TestAnOverrunTheProviderCountedIsTakenOnceByTheGateway(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-ratelimit-remaining-tokens", "850") // 1000 - the usage, 150
		io.WriteString(w, `{"usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}`)
	}))
	defer up.Close()
	g, url := gateway(t, up.URL, []Key{{Name: "a", Secret: "sk-a", TPM: 1000}}, fakeclock.New())
	// "hi" is 1 token, plus max_tokens 99: an estimate of 100.
	if resp, body := post(t, url, `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 99}`); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if left, _ := g.sched.Remaining("a"); left["tokens"] != 850 {
		t.Errorf("the bucket holds %d tokens, the provider said 850", left["tokens"])
	}
}
