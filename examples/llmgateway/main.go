// Command llmgateway is a small LLM gateway: a reverse proxy in front of
// an OpenAI-compatible provider that spreads calls over several API keys
// and keeps each key's requests and tokens per minute with crs, so that
// the provider never has to refuse a call.
//
// For each request it estimates the call's tokens from the body (the
// prompt's text and the body's other text (tools, a completions prompt,
// an input), a quarter of its bytes, plus -image-tokens for each image,
// plus max_tokens for each of the n completions asked for: never less
// than the provider reserves), leases a key whose buckets cover that
// estimate (waiting for one if none does), sets the key in the
// Authorization header and forwards the call. When the answer comes back
// it feeds the provider's x-ratelimit-remaining-* headers back to the
// key's buckets and settles the lease to the tokens the call really
// spent, read from the answer's usage block, in an order that works
// whether the provider refunds the unused estimate or keeps it (see
// settle). A 429 rests the key for its Retry-After and is passed on to
// the caller.
//
// What it reads: a JSON answer with a "usage" block, the shape of
// chat completions and completions. A streamed answer (text/event-stream),
// or any other body, is passed on untouched and keeps the estimate
// charged: reading its usage would mean parsing the stream. The estimate
// is never below what the provider charges up front, so a key is never
// overdrawn either way; it only uses less of its budget.
//
//	LLMGATEWAY_KEYS=sk-1,sk-2 go run ./examples/llmgateway -upstream https://api.openai.com -rpm 500 -tpm 200000
//	go run ./cmd/mockprovider -keys 2 -rpm 600 -tpm 40000      # a provider to try it on
//	LLMGATEWAY_KEYS=sk-mock-1,sk-mock-2 go run ./examples/llmgateway -upstream http://127.0.0.1:PORT
//	curl -s localhost:8080/v1/chat/completions -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50}'
//
// The keys come from the environment, never from the command line, which
// other users of the machine can read. The gateway does not authenticate
// its own callers: put it behind what does.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// Key is one API key of the provider, with the provider's limits for it.
type Key struct {
	Name     string // what logs show; never the secret
	Secret   string
	RPM, TPM int64 // requests and tokens per minute; 0: no such limit
}

// defaultMaxTokens is the max_tokens assumed for a request that gives
// none (the mock provider's default; a real provider's is the model's
// whole output limit, so callers should give it).
const defaultMaxTokens = 256

// defaultImageTokens is what an image part counts when the Gateway's
// ImageTokens is 0: the most one image costs on gpt-4o at detail high
// (85 tokens, plus 170 for each of at most 8 tiles of 512 pixels). Other
// models count images otherwise (gpt-4o-mini at many times that): set
// ImageTokens to the most your model charges for one.
const defaultImageTokens = 85 + 170*8

// maxBody bounds a request body and a JSON answer read for its usage.
const maxBody = 8 << 20

// Gateway is the proxy, an http.Handler.
type Gateway struct {
	// ImageTokens is what each image of a request counts in its estimate;
	// 0 means defaultImageTokens. Set it before serving.
	ImageTokens int64

	sched *scheduler.Scheduler[Key, string]
	proxy *httputil.ReverseProxy
}

// NewGateway proxies to upstream with keys. clock is the scheduler's
// (nil: the system's), which tests replace.
func NewGateway(upstream *url.URL, keys []Key, clock config.Clock) (*Gateway, error) {
	sched, err := scheduler.New(config.Config[Key, string]{
		// Every key ranks the same, so the key with the most budget left
		// goes first.
		Comparator:    func(a, b Key) int { return 0 },
		KeyFunc:       func(k Key) string { return k.Name },
		AcquirePolicy: config.Shared, // a key takes any number of calls at once
		Limits:        limits,
		Clock:         clock,
	})
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := sched.Add(k); err != nil {
			sched.Shutdown()
			return nil, err
		}
	}
	g := &Gateway{sched: sched}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Header.Set("Authorization", "Bearer "+callOf(pr.In.Context()).lease.Value().Secret)
			// The answer's usage must be readable: let the Transport
			// negotiate compression, and undo it, itself.
			pr.Out.Header.Del("Accept-Encoding")
		},
		ModifyResponse: g.answered,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			callOf(r.Context()).end()
			log.Printf("llmgateway: %v", err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return g, nil
}

// limits are a key's budgets, as the provider states them: a call costs
// 1 request (the cost does not name it) and its tokens.
func limits(k Key) []config.Limit {
	var ls []config.Limit
	if k.RPM > 0 {
		ls = append(ls, config.Limit{Name: "requests", Max: k.RPM, Per: time.Minute})
	}
	if k.TPM > 0 {
		ls = append(ls, config.Limit{Name: "tokens", Max: k.TPM, Per: time.Minute})
	}
	return ls
}

// Close stops the scheduler; calls waiting for a key fail.
func (g *Gateway) Close() { g.sched.Shutdown() }

// call is one request's lease, which ends exactly once: when the answer
// comes back, when the upstream cannot be reached, or, if neither ran,
// when ServeHTTP returns. The proxy runs its hooks in the goroutine of
// ServeHTTP, so ended needs no lock.
type call struct {
	lease    scheduler.Lease[Key, string]
	estimate int64 // the tokens the lease was granted on
	ended    bool
}

type callKey struct{}

func callOf(ctx context.Context) *call { return ctx.Value(callKey{}).(*call) }

// end releases the lease; whatever the call was charged stays charged.
func (c *call) end() {
	if !c.ended {
		c.ended = true
		_ = c.lease.Release() // only fails if the lease has ended already
	}
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "llmgateway: unreadable or too large a body", http.StatusBadRequest)
		return
	}
	images := g.ImageTokens
	if images <= 0 {
		images = defaultImageTokens
	}
	est := estimate(body, images)
	// Keys given without a TPM have no tokens limit, perhaps all of them:
	// they ignore the tokens rather than refuse them as unknown.
	lease, err := g.sched.Lease(r.Context(), scheduler.WithCost(config.Cost{"tokens": est}), scheduler.AllowUnknownLimits())
	switch {
	case errors.Is(err, crserrors.ErrCostExceedsLimits):
		http.Error(w, "llmgateway: the call needs more tokens than any key's limit", http.StatusBadRequest)
		return
	case err != nil:
		if r.Context().Err() == nil { // otherwise the caller has gone
			http.Error(w, "llmgateway: "+err.Error(), http.StatusServiceUnavailable)
		}
		return
	}
	c := &call{lease: lease, estimate: est}
	defer c.end()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
}

// answered ends the call's lease as its answer says: a 429 rests the key,
// a JSON answer settles the lease to its usage, and every answer's
// x-ratelimit-remaining-* lowers the key's buckets to what the provider
// says is left.
func (g *Gateway) answered(resp *http.Response) error {
	c := callOf(resp.Request.Context())
	if resp.StatusCode == http.StatusTooManyRequests {
		observe(&c.lease, resp.Header, 0)
		if c.lease.Cooldown(retryAfter(resp.Header)) == nil {
			c.ended = true
		}
		c.end() // if Cooldown could not end the lease
		return nil
	}
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		if err != nil {
			resp.Body.Close()
			return err // the ErrorHandler answers 502
		}
		if int64(len(body)) > maxBody { // too long to read for its usage: pass it on whole
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		} else {
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		if used := usageOf(body); used >= 0 {
			g.settle(c, used, resp.Header)
			c.end()
			return nil
		}
	}
	observe(&c.lease, resp.Header, 0)
	c.end()
	return nil
}

// settle feeds a served call back: the provider's figures first, then the
// settlement to what the call used. A provider may refund the unused part
// of the estimate when the call ends, or keep it charged; its remaining
// tokens say which. Settling first would let the refund serve a waiting
// call before that figure arrives, on budget a provider that kept the
// estimate does not have. So the figure is observed less the refund to
// come, and the refund is at most what the provider says is left: the
// bucket never holds more than the provider said, not even in between.
// A call that spent more than its estimate is the other way round: the
// provider's figure already counts the overrun, which the settlement
// takes, so the figure is observed plus the overrun (a negative refund),
// and the overrun is taken once.
func (g *Gateway) settle(c *call, used int64, h http.Header) {
	refund := c.estimate - used
	if left, err := strconv.ParseInt(h.Get("x-ratelimit-remaining-tokens"), 10, 64); err == nil && left >= 0 {
		refund = min(refund, left)
	}
	observe(&c.lease, h, refund)
	spent := max(used, c.estimate-refund)
	if err := c.lease.Settle(config.Cost{"tokens": spent}); err != nil {
		log.Printf("llmgateway: settle: %v", err)
	}
}

// observe feeds OpenAI's x-ratelimit-remaining-requests and -tokens, with
// their x-ratelimit-reset-*, to the lease's key, the tokens less refund
// (see settle). A header that is absent or unreadable is skipped, and so
// is a limit the key does not have.
func observe(l *scheduler.Lease[Key, string], h http.Header, refund int64) {
	for _, name := range []string{"requests", "tokens"} {
		left, err := strconv.ParseInt(h.Get("x-ratelimit-remaining-"+name), 10, 64)
		if err != nil || left < 0 {
			continue
		}
		if name == "tokens" {
			left = min(left-refund, config.MaxUnits)
		}
		reset, err := time.ParseDuration(h.Get("x-ratelimit-reset-" + name))
		if err != nil || reset < 0 {
			reset = 0
		}
		if err := l.Observe(name, left, reset); err != nil && !errors.Is(err, crserrors.ErrUnknownLimit) {
			log.Printf("llmgateway: observe %s: %v", name, err)
		}
	}
}

// estimate is what a call may spend, as OpenAI counts it before running
// it, and never less: the prompt's tokens plus max_tokens for each of
// the n completions asked for. The prompt's text counts a quarter of its
// bytes (a rule of thumb with no tokenizer); each image part counts
// imageTokens whatever its size, since a provider charges an image by
// its dimensions, not by its URL's length; any other part (audio, a
// file) counts a quarter of its JSON's bytes, far above what base64 data
// costs. Every other string, array or object of the body but the model
// counts a quarter of its JSON's bytes too: a completions "prompt", an
// "input", "tools", a response format are read by the model as well. A
// body that is not JSON is estimated at its size over 4 plus the default
// max_tokens. An estimate past config.MaxUnits is config.MaxUnits: more
// than any key's limit, so refused at once.
func estimate(body []byte, imageTokens int64) int64 {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		MaxTokens           int64 `json:"max_tokens"`
		MaxCompletionTokens int64 `json:"max_completion_tokens"`
		MaxOutputTokens     int64 `json:"max_output_tokens"`
		N                   int64 `json:"n"`
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &fields) != nil {
		return int64(len(body)+3)/4 + defaultMaxTokens
	}
	var prompt int64
	for _, m := range req.Messages {
		prompt = min(prompt+contentTokens(m.Content, imageTokens), config.MaxUnits)
	}
	for name, v := range fields {
		if name != "messages" && name != "model" && len(v) > 0 && strings.ContainsRune(`"[{`, rune(v[0])) {
			prompt = min(prompt+int64(len(v)+3)/4, config.MaxUnits)
		}
	}
	out := max(req.MaxTokens, req.MaxCompletionTokens, req.MaxOutputTokens)
	if out <= 0 {
		out = defaultMaxTokens
	}
	prompt, n := max(prompt, 1), max(req.N, 1)
	if prompt >= config.MaxUnits || out > (config.MaxUnits-prompt)/n {
		return config.MaxUnits
	}
	return prompt + out*n
}

// contentTokens estimates a message's content: a string, or an array of
// parts (see estimate). The sum saturates at config.MaxUnits.
func contentTokens(content json.RawMessage, imageTokens int64) int64 {
	var text string
	if json.Unmarshal(content, &text) == nil {
		return int64(len(text)+3) / 4
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return int64(len(content)+3) / 4
	}
	var raw []json.RawMessage
	_ = json.Unmarshal(content, &raw) // parses: parts did
	var n int64
	for i, p := range parts {
		switch p.Type {
		case "text":
			n += int64(len(p.Text)+3) / 4
		case "image_url", "input_image", "image":
			n += imageTokens
		default:
			n += int64(len(raw[i])+3) / 4
		}
		n = min(n, config.MaxUnits)
	}
	return n
}

// usageOf reads total_tokens from an answer's usage block; -1 if it has
// none.
func usageOf(body []byte) int64 {
	var v struct {
		Usage *struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &v) != nil || v.Usage == nil || v.Usage.TotalTokens < 0 {
		return -1
	}
	return v.Usage.TotalTokens
}

// retryAfter reads a 429's wait: retry-after-ms, then Retry-After in
// seconds; a second if it gives neither.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 && ms < 1e9 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.ParseFloat(h.Get("Retry-After"), 64); err == nil && s > 0 && s < 1e6 {
		return time.Duration(s * float64(time.Second))
	}
	return time.Second
}

func main() {
	addr := flag.String("listen", "127.0.0.1:8080", "`address` to serve on")
	upstream := flag.String("upstream", "", "the provider's base `URL`, such as https://api.openai.com")
	rpm := flag.Int64("rpm", 600, "requests per minute per key (0: no limit)")
	tpm := flag.Int64("tpm", 40000, "tokens per minute per key (0: no limit)")
	images := flag.Int64("image-tokens", defaultImageTokens, "what one image counts in a call's estimate: the most your model charges for one")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Scheme == "" || u.Host == "" {
		log.Fatalf("llmgateway: -upstream %q: want a URL such as https://api.openai.com", *upstream)
	}
	var keys []Key
	for i, secret := range strings.Split(os.Getenv("LLMGATEWAY_KEYS"), ",") {
		if secret = strings.TrimSpace(secret); secret != "" {
			keys = append(keys, Key{Name: fmt.Sprintf("key-%d", i+1), Secret: secret, RPM: *rpm, TPM: *tpm})
		}
	}
	if len(keys) == 0 {
		log.Fatal("llmgateway: no keys: set LLMGATEWAY_KEYS=key1,key2,...")
	}
	g, err := NewGateway(u, keys, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	g.ImageTokens = *images
	log.Printf("llmgateway: %d keys, proxying %s on http://%s", len(keys), u, *addr)
	srv := &http.Server{Addr: *addr, Handler: g, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
	}
}
