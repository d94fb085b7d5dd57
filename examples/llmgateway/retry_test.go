package main

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// upstream answers each key as answer says, counting the calls per key;
// a 200 is a JSON answer with a usage of 10 tokens.
func upstream(t *testing.T, answer map[string]int) (string, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen[key]++
		mu.Unlock()
		status := answer[key]
		if status == 0 || status == http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}`)
			return
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "30")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(up.Close)
	return up.URL, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range seen {
			out[k] = v
		}
		return out
	}
}

var twoKeys = []Key{{Name: "a", Secret: "sk-a", RPM: 100, TPM: 10000}, {Name: "b", Secret: "sk-b", RPM: 100, TPM: 10000}}

// A 429 goes to a key with room before it reaches the caller.
func TestA429IsRetriedOnAKeyWithRoom(t *testing.T) {
	up, seen := upstream(t, map[string]int{"sk-a": http.StatusTooManyRequests})
	_, url := gateway(t, up, twoKeys, fakeclock.New())
	for i := 0; i < 3; i++ {
		if resp, body := post(t, url, chatBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: status %d: %s", i, resp.StatusCode, body)
		}
	}
	if s := seen(); s["sk-a"] != 1 || s["sk-b"] != 3 {
		t.Fatalf("calls per key %v: want the refusing key tried once, then resting", s)
	}
}

// A dead key costs the callers nothing: each call it failed goes to the
// other key, a failed key takes one call at a time, and three failures
// in a row eject it (the clock does not move: it stays out).
func TestADeadKeyIsRoutedAroundAndEjected(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusUnauthorized} {
		up, seen := upstream(t, map[string]int{"sk-a": status})
		g, url := gateway(t, up, twoKeys, fakeclock.New())
		for i := 0; i < 10; i++ {
			if resp, body := post(t, url, chatBody); resp.StatusCode != http.StatusOK {
				t.Fatalf("%d: call %d: status %d: %s", status, i, resp.StatusCode, body)
			}
		}
		if s := seen(); s["sk-a"] > DefaultEjection.ConsecutiveFailures || s["sk-b"] != 10 {
			t.Fatalf("%d: calls per key %v", status, s)
		}
		if st := g.sched.Stats(); st.Ejections != 1 || st.Holders != 0 {
			t.Fatalf("%d: %d ejections, %d holders", status, st.Ejections, st.Holders)
		}
		left, _ := g.sched.Remaining("a")
		if left["tokens"] != 10000 {
			t.Fatalf("%d: the dead key's calls kept %d tokens charged", status, 10000-left["tokens"])
		}
	}
}

// A call the provider refused without running it costs what the
// provider counts, a request and no tokens, and is passed on.
func TestARefusedCallCostsARequestAndNoTokens(t *testing.T) {
	up, _ := upstream(t, map[string]int{"sk-a": http.StatusNotFound})
	g, url := gateway(t, up, twoKeys[:1], fakeclock.New())
	if resp, _ := post(t, url, chatBody); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d, want the 404 passed on", resp.StatusCode)
	}
	if left, _ := g.sched.Remaining("a"); left["tokens"] != 10000 || left["requests"] != 99 {
		t.Fatalf("after a 404: %v left", left)
	}
	if st := g.sched.Stats(); st.Failures != 0 {
		t.Fatalf("a 404 counted as a failure of the key")
	}
}

// A malformed request is refused before it takes any budget, and never
// reaches the provider.
func TestAMalformedRequestCostsNothing(t *testing.T) {
	up, seen := upstream(t, nil)
	g, url := gateway(t, up, twoKeys[:1], fakeclock.New())
	for _, body := range []string{
		`not json`,
		`[1, 2]`,
		`{"max_tokens": 10}`,
		`{"messages": [], "max_tokens": 10}`,
		`{"messages": "hi", "max_tokens": 10}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1e12}`,
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": "ten"}`,
		`{"messages": [{"role": "user", "content": "hi"}], "n": 1000}`,
	} {
		if resp, _ := post(t, url, body); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", body, resp.StatusCode)
		}
	}
	big := `{"messages": [{"role": "user", "content": "` + strings.Repeat("x", maxBody) + `"}]}`
	if resp, _ := post(t, url, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body above the bound: status %d, want 413", resp.StatusCode)
	}
	resp, err := http.Get(url + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	if left, _ := g.sched.Remaining("a"); left["tokens"] != 10000 || left["requests"] != 100 || len(seen()) != 0 {
		t.Fatalf("after malformed calls: %v left, the provider saw %v", left, seen())
	}
}

// -upstream takes a base URL with or without its /v1, as OpenAI's
// clients do: the path is never doubled.
func TestTheUpstreamsV1IsNotRepeated(t *testing.T) {
	for _, tc := range []struct{ upstream, in, want string }{
		{"http://h", "/v1/chat/completions", "http://h/v1/chat/completions"},
		{"http://h/v1", "/v1/chat/completions", "http://h/v1/chat/completions"},
		{"http://h/v1/", "/v1/chat/completions", "http://h/v1/chat/completions"},
		{"http://h/openai/v1", "/v1/chat/completions?x=1", "http://h/openai/v1/chat/completions?x=1"},
		{"http://h/base?api-version=2", "/v1/chat/completions", "http://h/base/v1/chat/completions?api-version=2"},
	} {
		u, _ := url.Parse(tc.upstream)
		in, _ := url.Parse(tc.in)
		if got := target(u, in); got != tc.want {
			t.Errorf("-upstream %s, call %s: %s, want %s", tc.upstream, tc.in, got, tc.want)
		}
	}
}

func TestKeysAreNamedInTheOrderGivenAndCounted(t *testing.T) {
	keys := keysFrom(" sk-1, ,sk-2,", 1, 2)
	if len(keys) != 2 || keys[1].Name != "key-2" || keys[1].Secret != "sk-2" || plural(len(keys), "key") != "2 keys" || plural(1, "key") != "1 key" {
		t.Fatalf("keys %+v", keys)
	}
}

// A body trickled a byte at a time must not hold a connection open.
func TestTheServerBoundsEveryPhaseOfACall(t *testing.T) {
	s := server("127.0.0.1:0", http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 {
		t.Fatalf("timeouts: header %v, read %v, write %v, idle %v", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout)
	}
}

func TestTheUsageSaysWhereTheKeysComeFrom(t *testing.T) {
	var b strings.Builder
	fs := flag.NewFlagSet("llmgateway", flag.ContinueOnError)
	fs.String("addr", "", "")
	printUsage(&b, fs)
	if !strings.Contains(b.String(), "LLMGATEWAY_KEYS") || !strings.Contains(b.String(), "-addr") {
		t.Fatalf("usage:\n%s", b.String())
	}
}

// A limit the provider states otherwise than the gateway was told
// becomes the key's.
func TestTheGatewayLearnsTheProvidersLimit(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-ratelimit-limit-tokens", "5000")
		w.Header().Set("x-ratelimit-remaining-tokens", "4990")
		io.WriteString(w, `{"usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}`)
	}))
	defer up.Close()
	g, url := gateway(t, up.URL, twoKeys[:1], fakeclock.New())
	if resp, body := post(t, url, chatBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var max int64
	g.sched.Budgets(func(_ string, b scheduler.Budget) bool {
		if b.Limit == "tokens" {
			max = b.Max
		}
		return true
	})
	if left, _ := g.sched.Remaining("a"); max != 5000 || left["tokens"] != 4990 {
		t.Fatalf("Max %d, %d left; want the provider's 5000 and 4990", max, left["tokens"])
	}
}
