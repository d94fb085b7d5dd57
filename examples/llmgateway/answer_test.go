package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/crsched/crs/harness/mockprovider"
	"github.com/crsched/crs/internal/fakeclock"
)

// A provider that keeps the estimate charged reports fewer tokens left
// than the settled bucket holds: the provider's figure must win, so the
// gateway observes after it settles.
func TestTheBucketNeverHoldsMoreThanTheProviderSaid(t *testing.T) {
	clk := fakeclock.New()
	m := mock(t, mockprovider.Config{Keys: []string{"sk-a"}, TokensPerMinute: 1000, KeepEstimate: true}, clk)
	g, url := gateway(t, m.URL, []Key{{Name: "a", Secret: "sk-a", TPM: 1000}}, clk)
	resp, body := post(t, url, chatBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	said, err := strconv.ParseInt(resp.Header.Get("x-ratelimit-remaining-tokens"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	left, err := g.sched.Remaining("a")
	if err != nil {
		t.Fatal(err)
	}
	if left["tokens"] > said {
		t.Fatalf("the bucket holds %d tokens, the provider said %d", left["tokens"], said)
	}
}

// Callers such as the OpenAI SDKs send Accept-Encoding: gzip. The answer
// must still be read for its usage.
func TestACompressedAnswerIsSettledToItsUsage(t *testing.T) {
	clk := fakeclock.New()
	inner, err := mockprovider.New(mockprovider.Config{Keys: []string{"sk-a"}, TokensPerMinute: 1000, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			inner.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(rec.Code)
		zw := gzip.NewWriter(w)
		zw.Write(rec.Body.Bytes())
		zw.Close()
	}))
	defer up.Close()
	g, url := gateway(t, up.URL, []Key{{Name: "a", Secret: "sk-a", TPM: 1000}}, clk)

	req, err := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	left, err := g.sched.Remaining("a")
	if err != nil {
		t.Fatal(err)
	}
	if spent, charged := 1000-left["tokens"], inner.Stats().Total.TokensCharged; spent != charged {
		t.Fatalf("the bucket lost %d tokens, the provider charged %d", spent, charged)
	}
}

// An answer too long to read for its usage still reaches the caller
// whole.
func TestALongAnswerReachesTheCallerWhole(t *testing.T) {
	long := `{"usage": {"total_tokens": 16}, "pad": "` + strings.Repeat("x", maxBody+1024) + `"}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, long)
	}))
	defer up.Close()
	_, url := gateway(t, up.URL, []Key{{Name: "a", Secret: "sk-a", TPM: 1000}}, fakeclock.New())
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) != len(long) {
		t.Fatalf("the caller got %d of %d bytes: %v", len(b), len(long), err)
	}
}

// OpenAI's rate-limit guide's own sample headers leave the key usable.
func TestOpenAIsSampleHeadersLeaveTheKeyUsable(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("x-ratelimit-remaining-requests", "59")
		h.Set("x-ratelimit-remaining-tokens", "149984")
		h.Set("x-ratelimit-reset-requests", "1s")
		h.Set("x-ratelimit-reset-tokens", "6m0s")
		io.WriteString(w, `{"usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16}}`)
	}))
	defer up.Close()
	g, url := gateway(t, up.URL, []Key{{Name: "a", Secret: "sk-a", RPM: 60, TPM: 150000}}, fakeclock.New())
	if resp, body := post(t, url, chatBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	left, err := g.sched.Remaining("a")
	if err != nil {
		t.Fatal(err)
	}
	if left["tokens"] != 149984 {
		t.Fatalf("the provider said 149,984 tokens left; the key's bucket holds %d", left["tokens"])
	}
}
