package loadtest

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/mockprovider"
)

// The llm scenario: workers make chat-completion calls, of random token
// costs, to an OpenAI-compatible provider over real HTTP, through a client
// that picks an API key per call (LLMClient): the crs scheduler, keeping
// each key's requests and tokens per minute, or the naive round robin
// that retries after a 429's Retry-After. By default the provider is
// harness/mockprovider, started in-process on a loopback port, with the
// same limits as the client is given, so that the run shows whether the
// client keeps them (no 429) and how much of the budget it uses.
//
// The workload: each call's prompt has Prompt tokens and asks for
// MaxTokens, each drawn uniformly from its range; the mock then draws the
// completion uniformly from 1 to max_tokens. With the defaults (prompt
// 50-750, max_tokens 50-350) a call is admitted on an estimate of 600
// tokens on average and spends 500: 80 calls a minute per key exhaust
// 40,000 tokens per minute long before 600 requests per minute, so the
// tokens budget binds, as it does for most LLM workloads.

// LLM is the llm scenario's name.
const LLM = "llm"

// LLMConfig is what the llm scenario reads beyond Workers, Duration,
// Seed and Pool ("crs" or "naive").
type LLMConfig struct {
	// Provider is the base URL of an OpenAI-compatible endpoint, with or
	// without its /v1 (OpenAI clients' base URL ends in /v1): the calls
	// go to its host's /v1/chat/completions. Empty starts the mock
	// provider in-process on 127.0.0.1:0.
	Provider string
	// Keys are the API keys; empty means sk-mock-1 ... sk-mock-N, N being
	// Config.Resources (the mock's names). Required with Provider.
	Keys []string
	// RPM and TPM are each key's requests and tokens per minute, given to
	// the client and, without Provider, to the mock; 0 means no such
	// limit.
	RPM, TPM int64
	// Prompt and MaxTokens are the distributions of a call's prompt
	// tokens and max_tokens.
	Prompt, MaxTokens Tokens
	// Latency is the mock's service time per call (without Provider).
	Latency mockprovider.Latency
	// Model is the model named in each request.
	Model string
	// Retries is how many other keys a call is tried on after an attempt
	// that failed for its key (LLMAnswer.KeyFault: no answer, a 5xx, a
	// 401 or 403); 0 never retries. A 429 is not counted: it is retried
	// for as long as the window lasts.
	Retries int
	// AttemptTimeout bounds one attempt: past it the attempt has failed
	// for its key, and the call is retried on another. 0: no bound.
	AttemptTimeout time.Duration
	// ProviderStats says the Provider is a mockprovider whose GET /stats
	// is read when the run ends: the provider's view of every client's
	// calls, which several processes on one pool share.
	ProviderStats bool
}

// DefaultLLM is the llm scenario's default: the 4 keys of 600 rpm
// and 40,000 tpm, calls of about 500 tokens, and a mock that takes 100 ms
// to 1 s per call.
var DefaultLLM = LLMConfig{
	RPM:       600,
	TPM:       40000,
	Prompt:    Tokens{Min: 50, Max: 750},
	MaxTokens: Tokens{Min: 50, Max: 350},
	Latency:   mockprovider.Latency{Min: 100 * time.Millisecond, Max: time.Second},
	Model:     "gpt-4o-mini",
	// A call meets at most three keys: two failing keys in a row is
	// already rare, and every retry costs the caller the attempt's time.
	Retries: 2,
	// Longer than any of the mock's calls, and than most providers'
	// non-streamed answers of a few hundred tokens.
	AttemptTimeout: time.Minute,
}

// keys are the run's API keys.
func (c LLMConfig) keys(resources int) []string {
	if len(c.Keys) > 0 {
		return c.Keys
	}
	keys := make([]string, resources)
	for i := range keys {
		keys[i] = "sk-mock-" + strconv.Itoa(i+1)
	}
	return keys
}

// Limits are each key's buckets, from RPM and TPM: what a client that
// keeps the provider's limits configures. The provider counts a call
// when it admits it, after the grant (Admission): a bucket taken from
// full refills from the next answer.
func (c LLMConfig) Limits() []config.Limit {
	var ls []config.Limit
	if c.RPM > 0 {
		ls = append(ls, config.Limit{Name: "requests", Max: c.RPM, Per: time.Minute, Admission: true})
	}
	if c.TPM > 0 {
		ls = append(ls, config.Limit{Name: "tokens", Max: c.TPM, Per: time.Minute, Admission: true})
	}
	return ls
}

// validate checks the settings that the llm scenario reads.
func (c LLMConfig) validate(pool string) error {
	switch {
	case pool != "crs" && pool != "naive":
		return fmt.Errorf("pool %q: the llm scenario runs crs or naive (or the client of an extension that has one, such as crsload-redis -redis)", pool)
	case c.RPM < 0 || c.TPM < 0:
		return errors.New("rpm, tpm: want >= 0 (0: no such limit)")
	case c.RPM == 0 && c.TPM == 0:
		return errors.New("rpm, tpm: the llm scenario needs at least one limit")
	case c.Prompt.Min < 1 || c.MaxTokens.Min < 1:
		return errors.New("prompt-tokens, max-tokens: want at least 1 token")
	case c.TPM > 0 && c.Prompt.Max+c.MaxTokens.Max > c.TPM:
		return fmt.Errorf("prompt-tokens, max-tokens: the largest call (%d tokens) is above -tpm %d: it could never be served",
			c.Prompt.Max+c.MaxTokens.Max, c.TPM)
	case c.Latency.Min < 0 || c.Latency.Max < c.Latency.Min:
		return errors.New("provider-latency: want 0 <= MIN <= MAX")
	case c.Retries < 0:
		return errors.New("retries: want >= 0")
	case c.AttemptTimeout < 0:
		return errors.New("attempt-timeout: want >= 0 (0: no bound)")
	}
	seen := map[string]bool{}
	for _, k := range c.Keys {
		if k == "" || strings.ContainsAny(k, " \t\r\n") {
			return fmt.Errorf("keys: %q is not a key (empty, or with spaces)", k)
		}
		if seen[k] {
			return fmt.Errorf("keys: %q given twice", k)
		}
		seen[k] = true
	}
	if c.Provider != "" {
		if len(c.Keys) == 0 {
			return errors.New("keys: -provider needs the provider's keys (-keys k1,k2 or -keys @FILE)")
		}
		if u, err := url.Parse(c.Provider); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("provider %q: want an http:// or https:// URL", c.Provider)
		}
	}
	return nil
}

// Tokens is a uniform distribution of token counts, Min to Max inclusive,
// read from "uniform:MIN-MAX" or "fixed:N".
type Tokens struct{ Min, Max int64 }

// ParseTokens reads "uniform:MIN-MAX" or "fixed:N", with 1 <= MIN <= MAX.
func ParseTokens(s string) (Tokens, error) {
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case "fixed":
		n, err := strconv.ParseInt(arg, 10, 64)
		if err == nil && n >= 1 && n <= maxCallTokens {
			return Tokens{Min: n, Max: n}, nil
		}
	case "uniform":
		lo, hi, _ := strings.Cut(arg, "-")
		a, err1 := strconv.ParseInt(lo, 10, 64)
		b, err2 := strconv.ParseInt(hi, 10, 64)
		if err1 == nil && err2 == nil && a >= 1 && a <= b && b <= maxCallTokens {
			return Tokens{Min: a, Max: b}, nil
		}
	}
	return Tokens{}, fmt.Errorf("tokens %q: want uniform:MIN-MAX or fixed:N, with 1 <= MIN <= MAX <= %d", s, maxCallTokens)
}

// maxCallTokens bounds a prompt or max_tokens: a prompt of that many
// tokens is a 4 MB request body, far above any model's context.
const maxCallTokens = 1 << 20

func (t Tokens) String() string {
	if t.Min == t.Max {
		return "fixed:" + strconv.FormatInt(t.Min, 10)
	}
	return fmt.Sprintf("uniform:%d-%d", t.Min, t.Max)
}

// Mean is the distribution's mean.
func (t Tokens) Mean() float64 { return float64(t.Min+t.Max) / 2 }

func (t Tokens) draw(r *rand.Rand) int64 {
	if t.Max <= t.Min {
		return t.Min
	}
	return t.Min + r.Int64N(t.Max-t.Min+1)
}

// LLMCall is one call of the workload.
type LLMCall struct {
	// Prompt is the prompt's tokens by the mock's count, MaxTokens the
	// call's max_tokens.
	Prompt, MaxTokens int64
	// Estimate is what the provider admits the call on, Prompt +
	// MaxTokens (mockprovider.Estimate), the prompt as the provider
	// counts it once an answer has shown how (see llmRun.estimated):
	// what a client must reserve so that the provider never refuses it.
	Estimate int64
	// Avoid are the keys (indexes) the call has failed on
	// (LLMAnswer.KeyFault): a client hands it another.
	Avoid []int
}

func drawCall(c LLMConfig, r *rand.Rand) LLMCall {
	p, m := c.Prompt.draw(r), c.MaxTokens.draw(r)
	return LLMCall{Prompt: p, MaxTokens: m, Estimate: p + m}
}

// readKeys reads -keys: a comma-separated list, or @FILE, one key a line
// (blank lines and lines starting with # skipped).
func readKeys(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if name, ok := strings.CutPrefix(s, "@"); ok {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var keys []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line != "" && !strings.HasPrefix(line, "#") {
				keys = append(keys, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("%s: no key", name)
		}
		return keys, nil
	}
	var keys []string
	for _, k := range strings.Split(s, ",") {
		keys = append(keys, strings.TrimSpace(k))
	}
	return keys, nil
}

// Budget is what one limit allowed over a run and what was spent of it.
type Budget struct {
	Name string `json:"name"` // "requests" or "tokens"
	// PerKey is each key's limit per minute; Allowed the budget the keys'
	// buckets allowed from the start to the end of the window: Max +
	// Max*window/Per per key, summed (allowedOver).
	PerKey  int64   `json:"per_key_per_minute"`
	Allowed int64   `json:"allowed"`
	Spent   int64   `json:"spent"`
	Share   float64 `json:"share"` // Spent / Allowed
}

// allowedOver is the budget one bucket of max per minute allows over
// window: a full bucket at the start plus the refill.
func allowedOver(max int64, window time.Duration) int64 {
	if max <= 0 {
		return 0
	}
	if window < 0 {
		window = 0
	}
	minutes, rest := int64(window/time.Minute), int64(window%time.Minute)
	return max + minutes*max + rest*max/int64(time.Minute)
}

// budgets sums the budgets of keys keys of cfg over window, against what
// was spent, the binding one being the one with the largest share.
func budgets(cfg LLMConfig, keys int, window time.Duration, requests, tokens int64) (out []Budget, binding string) {
	best := -1.0
	for _, b := range []Budget{{Name: "requests", PerKey: cfg.RPM, Spent: requests}, {Name: "tokens", PerKey: cfg.TPM, Spent: tokens}} {
		if b.PerKey == 0 {
			continue
		}
		b.Allowed = int64(keys) * allowedOver(b.PerKey, window)
		b.Share = float64(b.Spent) / float64(b.Allowed)
		if b.Share > best {
			best, binding = b.Share, b.Name
		}
		out = append(out, b)
	}
	return out, binding
}
