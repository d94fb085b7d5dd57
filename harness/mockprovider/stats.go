package mockprovider

import (
	"net/http"
	"time"
)

// Stats are the Provider's counters since New, as Stats and GET /stats
// report them.
type Stats struct {
	// Elapsed is the time since New, by Config.Now.
	Elapsed time.Duration `json:"elapsed_ns"`
	// RequestsPerMinute and TokensPerMinute are each key's limits (0:
	// none), as they stand (see Config.Change).
	RequestsPerMinute int64 `json:"requests_per_minute"`
	TokensPerMinute   int64 `json:"tokens_per_minute"`
	// Unauthorized counts calls with a missing or unknown key (401).
	Unauthorized int64 `json:"unauthorized"`
	// Keys has one entry per key, in Config.Keys' order; Total sums them
	// (its Key is empty).
	Keys  []KeyStats `json:"keys"`
	Total KeyStats   `json:"total"`
}

// KeyStats are one key's counters.
type KeyStats struct {
	Key string `json:"key,omitempty"`
	// Received counts the calls made with the key: Served + RateLimited +
	// BadRequests + ServerErrors, plus the calls still running.
	Received int64 `json:"received"`
	// Served counts the calls admitted and answered 200, Aborted those of
	// them whose client went away before the answer (they are charged
	// like the others: the provider did the work).
	Served  int64 `json:"served"`
	Aborted int64 `json:"aborted"`
	// RateLimited counts the 429s, TooLarge those of them for a call
	// whose estimate is above the tokens limit itself.
	RateLimited int64 `json:"rate_limited"`
	TooLarge    int64 `json:"too_large"`
	// BadRequests counts the 400s.
	BadRequests int64 `json:"bad_requests"`
	// ServerErrors counts the 500s of a failing key (Config.FailKeys).
	ServerErrors int64 `json:"server_errors"`
	// PromptTokens, CompletionTokens and TotalTokens sum the usage blocks
	// of the served calls: the tokens spent.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	// TokensCharged is what the tokens bucket kept for the served calls:
	// TotalTokens, or the estimates under Config.KeepEstimate.
	TokensCharged int64 `json:"tokens_charged"`
	// RequestsAllowed and TokensAllowed are the budget the key's buckets
	// allowed since New: a full bucket plus a minute's worth per minute
	// elapsed, the most that any client could have spent (0 without the
	// limit). TotalTokens / TokensAllowed is the share of the token budget
	// a client used.
	RequestsAllowed int64 `json:"requests_allowed"`
	TokensAllowed   int64 `json:"tokens_allowed"`
}

func (s *KeyStats) add(o KeyStats) {
	s.Received += o.Received
	s.Served += o.Served
	s.Aborted += o.Aborted
	s.RateLimited += o.RateLimited
	s.TooLarge += o.TooLarge
	s.BadRequests += o.BadRequests
	s.ServerErrors += o.ServerErrors
	s.PromptTokens += o.PromptTokens
	s.CompletionTokens += o.CompletionTokens
	s.TotalTokens += o.TotalTokens
	s.TokensCharged += o.TokensCharged
	s.RequestsAllowed += o.RequestsAllowed
	s.TokensAllowed += o.TokensAllowed
}

// allowed is the budget a bucket of perMinute allows over elapsed: its
// initial fill plus its refill.
func allowed(perMinute int64, elapsed time.Duration) int64 {
	if perMinute == 0 || elapsed < 0 {
		return perMinute
	}
	minutes, rest := int64(elapsed/time.Minute), int64(elapsed%time.Minute)
	return perMinute + minutes*perMinute + rest*perMinute/int64(time.Minute)
}

// allowed is the budget of a limit of perMinute, changed to then at
// Config.Change.At (0: not changed), over elapsed: a full bucket, the
// refill at the old rate until the change and at the new one after it.
func (p *Provider) allowed(perMinute, then int64, elapsed time.Duration) int64 {
	at := p.cfg.Change.At
	if perMinute == 0 || then == 0 || at <= 0 || elapsed <= at {
		return allowed(perMinute, elapsed)
	}
	return allowed(perMinute, at) + allowed(then, elapsed-at) - then
}

// changed is a limit of perMinute after a change to then (0: kept).
func changed(perMinute, then int64) int64 {
	if perMinute == 0 || then == 0 {
		return perMinute
	}
	return then
}

// Stats returns the counters as they stand.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := p.now().Sub(p.start)
	s := Stats{
		Elapsed:           elapsed,
		RequestsPerMinute: p.cfg.RequestsPerMinute,
		TokensPerMinute:   p.cfg.TokensPerMinute,
		Unauthorized:      p.unauthorized,
		Keys:              make([]KeyStats, len(p.order)),
	}
	if c := p.cfg.Change; p.changed {
		s.RequestsPerMinute = changed(s.RequestsPerMinute, c.RequestsPerMinute)
		s.TokensPerMinute = changed(s.TokensPerMinute, c.TokensPerMinute)
	}
	for i, k := range p.order {
		ks := k.stats
		ks.RequestsAllowed = p.allowed(p.cfg.RequestsPerMinute, p.cfg.Change.RequestsPerMinute, elapsed)
		ks.TokensAllowed = p.allowed(p.cfg.TokensPerMinute, p.cfg.Change.TokensPerMinute, elapsed)
		s.Keys[i] = ks
		s.Total.add(ks)
	}
	return s
}

func (p *Provider) serveStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, p.Stats())
}
