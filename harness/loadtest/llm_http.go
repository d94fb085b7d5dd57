package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// This file is the HTTP side of the llm scenario: a chat-completion
// request, and what a client reads from the answer.

// llmHTTP sends the workload's calls to one provider.
type llmHTTP struct {
	endpoint string // the host's URL + "/v1/chat/completions"
	model    string
	client   *http.Client
}

// newLLMHTTP keeps up to workers idle connections to the provider: with
// net/http's default of 2 per host, fifty workers would open and close a
// connection for most of their calls, and the run would measure that.
func newLLMHTTP(baseURL, model string, workers int) *llmHTTP {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = workers
	tr.MaxIdleConnsPerHost = workers
	return &llmHTTP{
		endpoint: providerURL(baseURL, "/v1/chat/completions"),
		model:    model,
		client:   &http.Client{Transport: tr},
	}
}

// providerURL is path on the provider at base: -provider takes OpenAI
// clients' base URL, which ends in /v1 (https://api.openai.com/v1), or
// the host alone; trailing slashes go, and a query (api-version=...)
// stays a query.
func providerURL(base, path string) string {
	u, err := url.Parse(base)
	if err != nil { // LLMConfig.validate refuses it first
		return strings.TrimRight(base, "/") + path
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + path
	u.RawPath, u.Fragment = "", ""
	return u.String()
}

// statsURL is where a mockprovider at base serves its counters.
func statsURL(base string) string { return providerURL(base, "/stats") }

func (h *llmHTTP) close() { h.client.CloseIdleConnections() }

// filler is the prompts' text: "tok " is one token by the mock's count (a
// quarter of the bytes), so a prompt of n tokens is its first 4n bytes.
var filler = strings.Repeat("tok ", 4096)

// promptText is a prompt of n tokens by the mock's count.
func promptText(n int64) string {
	if n <= int64(len(filler)/4) {
		return filler[:4*n]
	}
	return strings.Repeat("tok ", int(n))
}

// LLMAnswer is what a client reads from one answer.
type LLMAnswer struct {
	Status int
	Err    error // transport error or unreadable 200 body; Status is then 0
	// Answered is the status the provider answered with, even when its
	// body could not be read; 0 when no answer came (a transport error,
	// or the attempt's timeout).
	Answered int
	Usage    LLMUsage
	// RetryAfter is a 429's wait, from retry-after-ms or else Retry-After
	// (seconds); 0 if it gave neither, which the mock does for a call that
	// can never fit.
	RetryAfter time.Duration
	// Remaining are the x-ratelimit-remaining-* headers, by limit name
	// ("requests", "tokens"), with the x-ratelimit-reset-* of the same
	// name; absent names were not sent.
	Remaining map[string]Remaining
}

// LLMUsage is an answer's usage block.
type LLMUsage struct {
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
	Total      int64 `json:"total_tokens"`
}

// Remaining is what an answer said of one limit: x-ratelimit-remaining-*
// with its reset, and x-ratelimit-limit-*.
type Remaining struct {
	Units int64         // -1: not sent
	Reset time.Duration // how long until the bucket is full again; 0 unknown
	Limit int64         // the provider's size of the bucket; 0: not sent
}

// send makes one call with key and reads its answer. ctx bounds the
// call: a call in progress when the run's window ends is let finish. An
// attempt that takes longer than timeout (0: no bound) ends without an
// answer.
func (h *llmHTTP) send(ctx context.Context, key string, c LLMCall, timeout time.Duration) LLMAnswer {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	body, err := json.Marshal(map[string]any{
		"model":      h.model,
		"messages":   []map[string]string{{"role": "user", "content": promptText(c.Prompt)}},
		"max_tokens": c.MaxTokens,
	})
	if err != nil {
		return LLMAnswer{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint, bytes.NewReader(body))
	if err != nil {
		return LLMAnswer{Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return LLMAnswer{Err: err}
	}
	defer resp.Body.Close()
	return readAnswer(resp)
}

// KeyFault reports whether an attempt that was neither served nor
// refused with a 429 failed because of its key rather than its call: no
// answer (a connection error, a timeout), a 5xx, or a 401 or 403 (a
// wrong or revoked key). Such an attempt ends with Lease.Fail, toward the
// key's ejection, and its call is retried on another key.
func (a LLMAnswer) KeyFault() bool {
	return a.Answered == 0 || a.Answered >= 500 || a.Answered == http.StatusUnauthorized || a.Answered == http.StatusForbidden
}

// Unrun reports whether the provider answered that it did not run the
// call: a 4xx other than 429, or a 5xx. It counts such a call as a
// request and no tokens, and so does a client that keeps its budgets
// (the call's tokens are settled to 0). A call that got no answer keeps
// its estimate: the provider may have run it.
func (a LLMAnswer) Unrun() bool {
	return a.Answered >= 400 && a.Answered != http.StatusTooManyRequests
}

// readAnswer reads a provider's answer; the body is read to the end, so
// that the connection is reused.
func readAnswer(resp *http.Response) LLMAnswer {
	a := LLMAnswer{Status: resp.StatusCode, Answered: resp.StatusCode, Remaining: rateHeaders(resp.Header)}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	switch {
	case err != nil:
		a.Err = err
	case resp.StatusCode == http.StatusOK:
		var v struct {
			Usage *json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal(body, &v); err != nil || v.Usage == nil {
			a.Err = fmt.Errorf("a 200 without a usage block: %.80q", body)
		} else if err := json.Unmarshal(*v.Usage, &a.Usage); err != nil {
			a.Err = fmt.Errorf("usage: %v", err)
		}
	case resp.StatusCode == http.StatusTooManyRequests:
		a.RetryAfter = retryAfter(resp.Header)
	}
	if a.Err != nil {
		a.Status = 0
	}
	return a
}

// retryAfter reads a 429's wait: retry-after-ms, which OpenAI sends and
// its SDKs read first, or else Retry-After in seconds (an HTTP date is
// not read: providers of this API send seconds).
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 && ms < 1e9 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.ParseFloat(h.Get("Retry-After"), 64); err == nil && s > 0 && s < 1e6 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}

// rateHeaders reads, for requests and tokens, OpenAI's
// x-ratelimit-limit-NAME, x-ratelimit-remaining-NAME and
// x-ratelimit-reset-NAME (a Go duration, "1s", "6m0s", "12ms", the form
// OpenAI writes), or else Anthropic's anthropic-ratelimit-NAME-limit,
// -remaining and -reset (an RFC 3339 time). A name with neither a limit
// nor a remaining figure is left out.
func rateHeaders(h http.Header) map[string]Remaining {
	var out map[string]Remaining
	for _, name := range []string{"requests", "tokens"} {
		r, ok := openAIHeaders(h, name)
		if !ok {
			r, ok = anthropicHeaders(h, name)
		}
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]Remaining{}
		}
		out[name] = r
	}
	return out
}

func openAIHeaders(h http.Header, name string) (Remaining, bool) {
	r := Remaining{Units: count(h.Get("x-ratelimit-remaining-" + name)), Limit: max(count(h.Get("x-ratelimit-limit-"+name)), 0)}
	if d, err := time.ParseDuration(h.Get("x-ratelimit-reset-" + name)); err == nil && d > 0 {
		r.Reset = d
	}
	return r, r.Units >= 0 || r.Limit > 0
}

func anthropicHeaders(h http.Header, name string) (Remaining, bool) {
	p := "anthropic-ratelimit-" + name
	r := Remaining{Units: count(h.Get(p + "-remaining")), Limit: max(count(h.Get(p+"-limit")), 0)}
	if at, err := time.Parse(time.RFC3339, h.Get(p+"-reset")); err == nil {
		r.Reset = max(time.Until(at), 0)
	}
	return r, r.Units >= 0 || r.Limit > 0
}

// count reads a header's whole number of units; -1 if it is absent or
// not one.
func count(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
