// Package mockprovider is a stand-in for an LLM provider: an http.Handler
// that speaks the shape of OpenAI's chat-completions API and enforces, per
// API key, requests per minute and tokens per minute with token buckets of
// its own, the way OpenAI states its limits. Load tests and examples point
// crs at it to check that a client keeps a provider's limits: it counts
// every call served and refused, and the budget its buckets allowed, so
// that the share of that budget a client used can be read off it.
//
// It is program code for the repository's commands (cmd/mockprovider,
// crsload's llm scenario) and tests (examples/llmgateway's among them),
// not a library API: it may change in any release.
//
// # The API
//
// POST /v1/chat/completions with "Authorization: Bearer KEY" and a JSON
// body with "messages" (each with "role" and "content", a string or an
// array of text parts) and "max_tokens" (or "max_completion_tokens")
// answers like OpenAI: a "chat.completion" object whose "usage" block
// gives prompt_tokens, completion_tokens and total_tokens. An unknown or
// missing key gets 401, a malformed body 400, and every call with a key of
// Config.FailKeys 500. GET /stats returns Stats as
// JSON.
//
// # How a call is charged
//
// OpenAI checks a call against its tokens limit before running it, on an
// estimate made from max_tokens: its rate-limit advice speaks of
// "contexts (prompts+max_tokens)", its guide of the larger of max_tokens
// and a character-count estimate of the request, and both tell clients to
// keep max_tokens close to the expected completion for that reason. The
// mock takes the sum, prompt tokens plus max_tokens: the most the call
// can spend, and the stricter of the two readings. Its prompt count has no
// tokenizer: it is PromptTokens, a quarter of each message's length in
// bytes rounded up, OpenAI's rule of thumb, so a client can compute the
// same estimate (Estimate). A call is admitted only if its key's requests
// bucket holds 1 and its tokens bucket holds the estimate; both are taken
// at once. The completion's length is then drawn (uniformly from 1 to
// max_tokens, or by Config.Completion), the call takes its latency, and
// when it ends the tokens charge is settled to the usage: the estimate
// minus what the call spent is refunded. With Config.KeepEstimate the
// estimate stays charged instead, the stricter reading of OpenAI's
// documentation. A refused call is charged nothing.
//
// # Refusals and headers
//
// A call that a bucket does not cover gets 429 with an OpenAI-style error
// body (type "requests" or "tokens", code "rate_limit_exceeded"), a
// Retry-After in whole seconds rounded up, and retry-after-ms in
// milliseconds rounded up (which OpenAI's Python SDK reads first): after
// that long, both buckets cover the call, if nothing else spends from
// them meanwhile. A call whose estimate is above the tokens limit itself
// can never be served: it gets 429 with no Retry-After (OpenAI answers
// "Request too large" the same way), counted as TooLarge.
//
// Every answer to a known key, 200, 400 and 429 alike, carries OpenAI's
// six headers for each limit the mock enforces:
// x-ratelimit-limit-requests and -tokens (the bucket's size),
// x-ratelimit-remaining-requests and -tokens (the whole units left, after
// this call's charge) and x-ratelimit-reset-requests and -tokens (how
// long until the bucket is full again, rounded up to the millisecond, in
// Go's duration format, which is OpenAI's: "1s", "6m0s", "12ms").
//
// # Time
//
// Config.Now and Config.Sleep replace the clock and the latency's wait,
// so that tests drive the buckets by hand and never sleep.
package mockprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxTokens is the max_tokens of a request that gives none, when
// Config.DefaultMaxTokens is 0.
const DefaultMaxTokens = 256

// maxBody bounds a request body.
const maxBody = 1 << 20

// maxMaxTokens bounds max_tokens, far above any model's, so that an
// estimate cannot overflow.
const maxMaxTokens = 1 << 32

// maxFiller bounds the filler text of a completion, in repetitions of
// "tok " (one token each, by PromptTokens's rule): the usage block, not
// the text, says how long the completion was.
const maxFiller = 1024

// Config configures a Provider.
type Config struct {
	// Keys are the API keys accepted, each with buckets of its own
	// (required, distinct, non-empty).
	Keys []string
	// RequestsPerMinute and TokensPerMinute are each key's limits: a
	// bucket of that many units, refilled continuously at that many per
	// minute. 0 means no such limit; at most about 76 million.
	RequestsPerMinute, TokensPerMinute int64
	// DefaultMaxTokens is the max_tokens of a request that gives none; 0
	// means the package's DefaultMaxTokens.
	DefaultMaxTokens int64
	// KeepEstimate keeps the up-front estimate (prompt + max_tokens)
	// charged, instead of settling each call to its usage when it ends.
	KeepEstimate bool
	// Latency is how long each call takes before it answers; the zero
	// value answers at once.
	Latency Latency
	// Completion, if set, is the completion length of a call allowed
	// maxTokens (clamped to [0, maxTokens]); nil draws it uniformly from
	// [1, maxTokens]. It is called with the Provider's lock held, so it
	// must not call back into the Provider.
	Completion func(maxTokens int64) int64
	// PromptFactor is how the provider counts a prompt against the
	// mock's own rule (PromptTokens): its prompt tokens are PromptFactor
	// times that, rounded up, as a tokenizer counts otherwise than a
	// client's rule of thumb; a call is admitted on them plus max_tokens,
	// and its usage reports them. 0 means 1.
	PromptFactor float64
	// ReportBeforeRefund takes a served call's x-ratelimit-remaining-*
	// figures before the refund of its unused estimate, as a provider
	// that takes them when it admits the call does: its answer shows less
	// left than the provider has once it answered.
	ReportBeforeRefund bool
	// OmitResets leaves the x-ratelimit-reset-* headers out, as Azure
	// OpenAI does: a client then knows what is left, not when the
	// provider's buckets started refilling.
	OmitResets bool
	// AdmissionLag is how long a call waits, once received, before it is
	// admitted (or refused), drawn for each call: a provider's queue in
	// front of its limits, which makes a client that counts from its
	// grant run ahead of the provider's buckets. The zero value admits at
	// once.
	AdmissionLag Latency
	// Change changes the limits at run time: at Change.At after New, each
	// limit the change gives (non-zero) becomes it, a bucket above its new
	// size cut to it, and the answers' x-ratelimit-limit-* say so.
	Change LimitChange
	// FailKeys are keys, among Keys, that answer 500 to every call, as
	// a key of a provider's broken deployment does: a dead key, which a
	// client must route around. Such a call is counted as a ServerError
	// and charged nothing.
	FailKeys []string
	// Seed seeds the draws of completion lengths and latencies.
	Seed uint64
	// Now is the clock of the buckets and of Stats; nil means time.Now.
	Now func() time.Time
	// Sleep waits out a call's latency, returning early when ctx is done;
	// nil waits on a timer.
	Sleep func(ctx context.Context, d time.Duration)
}

// LimitChange is a change of the limits at run time (Config.Change).
type LimitChange struct {
	// At is when, after New; 0: no change.
	At time.Duration
	// RequestsPerMinute and TokensPerMinute are the new limits; 0 keeps
	// the limit as it was (a limit cannot be added or removed).
	RequestsPerMinute, TokensPerMinute int64
}

// Latency is the distribution of a call's duration: uniform in
// [Min, Max], fixed when they are equal.
type Latency struct{ Min, Max time.Duration }

// ParseLatency reads "fixed:D" or "uniform:MIN-MAX" with Go durations
// ("fixed:0", "uniform:20ms-500ms"), the forms crsload's -latency takes.
func ParseLatency(s string) (Latency, error) {
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case "fixed":
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return Latency{}, fmt.Errorf("latency %q: want fixed:D with a duration >= 0", s)
		}
		return Latency{Min: d, Max: d}, nil
	case "uniform":
		lo, hi, _ := strings.Cut(arg, "-")
		a, err1 := time.ParseDuration(lo)
		b, err2 := time.ParseDuration(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return Latency{}, fmt.Errorf("latency %q: want uniform:MIN-MAX with 0 <= MIN <= MAX", s)
		}
		return Latency{Min: a, Max: b}, nil
	}
	return Latency{}, fmt.Errorf("latency %q: want fixed:D or uniform:MIN-MAX", s)
}

// String is the form ParseLatency reads.
func (l Latency) String() string {
	if l.Min == l.Max {
		return "fixed:" + l.Min.String()
	}
	return "uniform:" + l.Min.String() + "-" + l.Max.String()
}

// Provider is the mock provider, an http.Handler. Make one with New.
type Provider struct {
	cfg   Config
	now   func() time.Time
	sleep func(context.Context, time.Duration)
	mux   *http.ServeMux
	start time.Time

	// mu guards the buckets, the counters and rng, all of which change
	// together when a call is admitted or settled.
	mu           sync.Mutex
	keys         map[string]*key
	order        []*key // Config.Keys' order, for Stats
	rng          *rand.Rand
	unauthorized int64
	calls        int64 // numbers the responses' ids
	changed      bool  // Config.Change is applied
}

type key struct {
	requests, tokens *limiter // nil without that limit
	dead             bool     // Config.FailKeys: answers 500
	stats            KeyStats
}

// New checks cfg and returns a Provider whose buckets are full as of now.
func New(cfg Config) (*Provider, error) {
	if len(cfg.Keys) == 0 {
		return nil, errors.New("mockprovider: no keys")
	}
	if !(cfg.PromptFactor >= 0 && cfg.PromptFactor <= 100) || cfg.Change.At < 0 {
		return nil, fmt.Errorf("mockprovider: PromptFactor %v, Change.At %v: want 0 to 100, and >= 0", cfg.PromptFactor, cfg.Change.At)
	}
	for _, n := range []int64{cfg.RequestsPerMinute, cfg.TokensPerMinute, cfg.Change.RequestsPerMinute, cfg.Change.TokensPerMinute} {
		if n < 0 || n > maxPerMinute {
			return nil, fmt.Errorf("mockprovider: limit %d per minute, want 0 (none) to %d", n, maxPerMinute)
		}
	}
	if cfg.DefaultMaxTokens < 0 || cfg.DefaultMaxTokens > maxMaxTokens {
		return nil, fmt.Errorf("mockprovider: DefaultMaxTokens %d, want 0 (the default) to %d", cfg.DefaultMaxTokens, maxMaxTokens)
	}
	if cfg.DefaultMaxTokens == 0 {
		cfg.DefaultMaxTokens = DefaultMaxTokens
	}
	for _, l := range []Latency{cfg.Latency, cfg.AdmissionLag} {
		if l.Min < 0 || l.Max < l.Min {
			return nil, fmt.Errorf("mockprovider: latency %v, want 0 <= Min <= Max", l)
		}
	}
	p := &Provider{
		cfg:   cfg,
		now:   cfg.Now,
		sleep: cfg.Sleep,
		keys:  make(map[string]*key, len(cfg.Keys)),
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x6d6f636b)),
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.sleep == nil {
		p.sleep = sleep
	}
	p.start = p.now()
	if err := p.addKeys(); err != nil {
		return nil, err
	}
	p.mux = http.NewServeMux()
	p.mux.HandleFunc("POST /v1/chat/completions", p.chat)
	p.mux.HandleFunc("GET /stats", p.serveStats)
	return p, nil
}

// addKeys makes the buckets of Config.Keys, full as of p.start, and
// marks the failing ones.
func (p *Provider) addKeys() error {
	for _, name := range p.cfg.Keys {
		if name == "" || strings.ContainsAny(name, " \t\r\n") {
			return fmt.Errorf("mockprovider: key %q: want a non-empty key without spaces", name)
		}
		if p.keys[name] != nil {
			return fmt.Errorf("mockprovider: key %q given twice", name)
		}
		k := &key{stats: KeyStats{Key: name}}
		if p.cfg.RequestsPerMinute > 0 {
			k.requests = newLimiter(p.cfg.RequestsPerMinute, p.start)
		}
		if p.cfg.TokensPerMinute > 0 {
			k.tokens = newLimiter(p.cfg.TokensPerMinute, p.start)
		}
		p.keys[name] = k
		p.order = append(p.order, k)
	}
	for _, name := range p.cfg.FailKeys {
		k := p.keys[name]
		if k == nil {
			return fmt.Errorf("mockprovider: failing key %q is not one of the keys", name)
		}
		k.dead = true
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// ServeHTTP serves the chat-completions endpoint and /stats.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// Message is one message of a chat.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is the part of a chat-completions request the mock reads.
type ChatRequest struct {
	Model     string    `json:"model,omitempty"`
	Messages  []Message `json:"messages"`
	MaxTokens int64     `json:"max_tokens,omitempty"`
}

// Usage is the usage block of a response.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Choice is one completion of a response.
type Choice struct {
	Index        int     `json:"index"`
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason"`
}

// ChatResponse is a chat-completions response, in OpenAI's format.
type ChatResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
}

// PromptTokens is the mock's count of a prompt's tokens: each message's
// content length in bytes divided by 4, rounded up, summed, and at least 1.
func PromptTokens(messages []Message) int64 {
	var n int64
	for _, m := range messages {
		n += (int64(len(m.Content)) + 3) / 4
	}
	return max(n, 1)
}

// Estimate is what the mock checks and charges against a key's tokens
// limit when it admits req: PromptTokens plus max_tokens, or plus
// defaultMaxTokens when req gives none.
func Estimate(req ChatRequest, defaultMaxTokens int64) int64 {
	mt := req.MaxTokens
	if mt <= 0 {
		mt = defaultMaxTokens
	}
	return PromptTokens(req.Messages) + mt
}

// wireRequest is ChatRequest as it arrives: content may be an array of
// parts, and max_completion_tokens is the newer name of max_tokens.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens           *int64 `json:"max_tokens"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
}

// decode reads a request body into a ChatRequest with MaxTokens set.
func (p *Provider) decode(r *http.Request) (ChatRequest, error) {
	var in wireRequest
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	if err := dec.Decode(&in); err != nil {
		return ChatRequest{}, fmt.Errorf("could not parse the JSON body of your request: %v", err)
	}
	if len(in.Messages) == 0 {
		return ChatRequest{}, errors.New("'messages' must be a non-empty array")
	}
	req := ChatRequest{Model: in.Model, Messages: make([]Message, len(in.Messages)), MaxTokens: p.cfg.DefaultMaxTokens}
	for i, m := range in.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			return ChatRequest{}, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		req.Messages[i] = Message{Role: m.Role, Content: text}
	}
	for _, mt := range []*int64{in.MaxCompletionTokens, in.MaxTokens} {
		if mt == nil {
			continue
		}
		if *mt < 1 || *mt > maxMaxTokens {
			return ChatRequest{}, fmt.Errorf("max_tokens is %d, want 1 to %d", *mt, maxMaxTokens)
		}
		req.MaxTokens = *mt
	}
	return req, nil
}

// contentText reads a message's content: a string, or an array of parts
// whose text parts are concatenated.
func contentText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of parts")
	}
	var b strings.Builder
	for _, part := range parts {
		if part.Type == "text" {
			b.WriteString(part.Text)
		}
	}
	return b.String(), nil
}

func (p *Provider) chat(w http.ResponseWriter, r *http.Request) {
	k := p.authorize(r)
	if k == nil {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
		return
	}
	if p.failed(k) {
		writeError(w, http.StatusInternalServerError, "The server had an error while processing your request.", "server_error", "")
		return
	}
	req, err := p.decode(r)
	if err != nil {
		p.mu.Lock()
		k.stats.Received++
		k.stats.BadRequests++
		p.writeLimitHeaders(w, k, p.now())
		p.mu.Unlock()
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "")
		return
	}
	prompt := p.promptTokens(req.Messages)
	estimate := prompt + req.MaxTokens
	if lag := p.cfg.AdmissionLag; lag.Max > 0 {
		p.mu.Lock()
		d := draw(p.rng, lag)
		p.mu.Unlock()
		p.sleep(r.Context(), d)
	}

	p.mu.Lock()
	now := p.now()
	p.changeLimits(now)
	k.stats.Received++
	if refused := p.admit(w, k, now, estimate); refused {
		p.mu.Unlock()
		return
	}
	completion := p.completion(req.MaxTokens)
	latency := p.latency()
	p.calls++
	id := p.calls
	p.mu.Unlock()

	p.sleep(r.Context(), latency)
	usage := Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	now = p.settle(w, r, k, estimate, usage)
	p.answer(w, req, id, now, usage)
}

// promptTokens is the provider's count of a prompt: PromptTokens, times
// Config.PromptFactor.
func (p *Provider) promptTokens(messages []Message) int64 {
	n := PromptTokens(messages)
	if f := p.cfg.PromptFactor; f > 0 && f != 1 {
		n = max(int64(math.Ceil(float64(n)*f)), 1)
	}
	return n
}

// settle charges a served call its usage (or keeps its estimate), counts
// it and writes the limit headers, before the refund with
// ReportBeforeRefund; it returns the time it did.
func (p *Provider) settle(w http.ResponseWriter, r *http.Request, k *key, estimate int64, usage Usage) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.changeLimits(now)
	if p.cfg.ReportBeforeRefund {
		p.writeLimitHeaders(w, k, now)
	}
	charged := estimate
	if k.tokens != nil {
		k.tokens.refill(now)
		if !p.cfg.KeepEstimate {
			k.tokens.settle(estimate, usage.TotalTokens)
			charged = usage.TotalTokens
		}
	}
	s := &k.stats
	s.Served++
	if r.Context().Err() != nil {
		s.Aborted++
	}
	s.PromptTokens += usage.PromptTokens
	s.CompletionTokens += usage.CompletionTokens
	s.TotalTokens += usage.TotalTokens
	s.TokensCharged += charged
	if !p.cfg.ReportBeforeRefund {
		p.writeLimitHeaders(w, k, now)
	}
	return now
}

// answer writes a served call's chat.completion.
func (p *Provider) answer(w http.ResponseWriter, req ChatRequest, id int64, now time.Time, usage Usage) {
	finish := "stop"
	if usage.CompletionTokens == req.MaxTokens {
		finish = "length"
	}
	model := req.Model
	if model == "" {
		model = "mock"
	}
	writeJSON(w, http.StatusOK, ChatResponse{
		ID:      "chatcmpl-mock-" + strconv.FormatInt(id, 10),
		Object:  "chat.completion",
		Created: now.Unix(),
		Model:   model,
		Choices: []Choice{{
			Message:      Message{Role: "assistant", Content: strings.Repeat("tok ", int(min(usage.CompletionTokens, maxFiller)))},
			FinishReason: finish,
		}},
		Usage: usage,
	})
}

// changeLimits applies Config.Change once its time has come. Requires
// p.mu.
func (p *Provider) changeLimits(now time.Time) {
	c := p.cfg.Change
	if c.At <= 0 || p.changed || now.Sub(p.start) < c.At {
		return
	}
	p.changed = true
	for _, k := range p.order {
		if k.requests != nil && c.RequestsPerMinute > 0 {
			k.requests.resize(c.RequestsPerMinute, now)
		}
		if k.tokens != nil && c.TokensPerMinute > 0 {
			k.tokens.resize(c.TokensPerMinute, now)
		}
	}
}

// failed counts a call to a dead key (Config.FailKeys), and reports
// whether k is one.
func (p *Provider) failed(k *key) bool {
	if !k.dead {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k.stats.Received++
	k.stats.ServerErrors++
	return true
}

// authorize returns the key of r's bearer token, or nil after counting an
// unauthorized call.
func (p *Provider) authorize(r *http.Request) *key {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.keys[strings.TrimSpace(token)]
	if !ok || k == nil {
		p.unauthorized++
		return nil
	}
	return k
}

// admit takes one request and estimate tokens from k's buckets, or writes
// the 429 and reports that it refused. Requires p.mu.
func (p *Provider) admit(w http.ResponseWriter, k *key, now time.Time, estimate int64) (refused bool) {
	if k.requests != nil {
		k.requests.refill(now)
	}
	if k.tokens != nil {
		k.tokens.refill(now)
		if estimate > k.tokens.max {
			k.stats.RateLimited++
			k.stats.TooLarge++
			p.writeLimitHeaders(w, k, now)
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
				"Request too large on tokens per min (TPM): Limit %d, Requested %d. The input or output tokens must be reduced in order to run successfully.",
				k.tokens.max, estimate), "tokens", "rate_limit_exceeded")
			return true
		}
	}
	var wait time.Duration
	kind, message := "", ""
	if k.requests != nil && !k.requests.covers(1) {
		wait = k.requests.wait(1)
		kind = "requests"
		message = fmt.Sprintf("Rate limit reached on requests per min (RPM): Limit %d, Remaining %d, Requested 1.", k.requests.max, k.requests.remaining())
	}
	if k.tokens != nil && !k.tokens.covers(estimate) {
		wait = max(wait, k.tokens.wait(estimate))
		if kind == "" {
			kind = "tokens"
			message = fmt.Sprintf("Rate limit reached on tokens per min (TPM): Limit %d, Remaining %d, Requested %d.", k.tokens.max, k.tokens.remaining(), estimate)
		}
	}
	if kind != "" {
		k.stats.RateLimited++
		ms := ceilDiv(int64(wait), int64(time.Millisecond))
		w.Header().Set("Retry-After", strconv.FormatInt(ceilDiv(int64(wait), int64(time.Second)), 10))
		w.Header().Set("retry-after-ms", strconv.FormatInt(ms, 10))
		p.writeLimitHeaders(w, k, now)
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%s Please try again in %v.", message, time.Duration(ms)*time.Millisecond), kind, "rate_limit_exceeded")
		return true
	}
	if k.requests != nil {
		k.requests.take(1)
	}
	if k.tokens != nil {
		k.tokens.take(estimate)
	}
	return false
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// completion draws a call's completion length. Requires p.mu.
func (p *Provider) completion(maxTokens int64) int64 {
	if p.cfg.Completion != nil {
		return min(max(p.cfg.Completion(maxTokens), 0), maxTokens)
	}
	return 1 + p.rng.Int64N(maxTokens)
}

// latency draws a call's latency. Requires p.mu.
func (p *Provider) latency() time.Duration { return draw(p.rng, p.cfg.Latency) }

// draw draws a duration from l with rng.
func draw(rng *rand.Rand, l Latency) time.Duration {
	if l.Max <= l.Min {
		return l.Min
	}
	return l.Min + time.Duration(rng.Int64N(int64(l.Max-l.Min)+1))
}

// writeLimitHeaders sets OpenAI's x-ratelimit-* headers for k's buckets,
// as they stand at now. Requires p.mu.
func (p *Provider) writeLimitHeaders(w http.ResponseWriter, k *key, now time.Time) {
	h := w.Header()
	for _, b := range []struct {
		name string
		l    *limiter
	}{{"requests", k.requests}, {"tokens", k.tokens}} {
		if b.l == nil {
			continue
		}
		b.l.refill(now)
		h.Set("x-ratelimit-limit-"+b.name, strconv.FormatInt(b.l.max, 10))
		h.Set("x-ratelimit-remaining-"+b.name, strconv.FormatInt(b.l.remaining(), 10))
		if !p.cfg.OmitResets {
			h.Set("x-ratelimit-reset-"+b.name, FormatReset(b.l.reset()))
		}
	}
}

// FormatReset writes a reset time as the x-ratelimit-reset-* headers do:
// rounded up to the millisecond, in Go's duration format ("0s", "12ms",
// "1.5s", "6m0s"), which is the format OpenAI uses.
func FormatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return (time.Duration(ceilDiv(int64(d), int64(time.Millisecond))) * time.Millisecond).String()
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, message, typ, code string) {
	e := apiError{Message: message, Type: typ}
	if code != "" {
		e.Code = &code
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client gone away is not the mock's error
}
