package loadtest

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crsched/crs/harness/mockprovider"
)

// LLMReport is what a run of the llm scenario measured, with one client.
// It is what -json writes for the scenario (a Report's LLM field).
// Durations are nanoseconds.
type LLMReport struct {
	Client      string      `json:"client"` // "crs" or "naive"
	ClientTitle string      `json:"client_title"`
	Provider    string      `json:"provider"` // the base URL
	Mock        bool        `json:"mock"`     // the provider is the in-process mock
	Environment Environment `json:"environment"`
	Keys        int         `json:"keys"`
	RPM         int64       `json:"rpm_per_key"` // 0: no such limit
	TPM         int64       `json:"tpm_per_key"`
	Workers     int         `json:"workers"`
	PromptDist  string      `json:"prompt_tokens_dist"`
	MaxTokDist  string      `json:"max_tokens_dist"`
	// MockLatency is the mock's service time per call (Mock only).
	MockLatency string `json:"mock_latency,omitempty"`
	Seed        uint64 `json:"seed"`
	// DurationNs is the window asked for, WindowNs the one that ran (less
	// if interrupted): no call is sent after it. ElapsedNs adds the time
	// the calls in progress at its end took to finish.
	DurationNs  int64         `json:"duration_ns"`
	WindowNs    int64         `json:"window_ns"`
	ElapsedNs   int64         `json:"elapsed_ns"`
	Interrupted *Interruption `json:"interrupted,omitempty"`
	Calls       LLMCalls      `json:"calls"`
	Tokens      LLMTokens     `json:"tokens"`
	// Budgets are the provider's budgets over the window, for the limits
	// it has; Binding names the one with the largest share used, and
	// BindingShare is that share.
	Budgets      []Budget   `json:"budgets"`
	Binding      string     `json:"binding"`
	BindingShare float64    `json:"binding_share"`
	Latency      LLMLatency `json:"latency"`
	PerKey       []LLMKey   `json:"per_key"`
	// ProviderStats are the mock's own counters, once every call ended
	// (Mock only).
	ProviderStats *mockprovider.Stats `json:"provider_stats,omitempty"`
	FirstError    string              `json:"first_error,omitempty"`
	Accounting    Accounting          `json:"accounting"`
	// Baseline is the naive client's run, with -compare.
	Baseline *LLMReport `json:"baseline,omitempty"`
}

// LLMCalls counts the workload's calls and the HTTP attempts they made.
// Every call is exactly one of Served, Failed and Unfinished; every
// attempt is exactly one of Served, RateLimited and Other.
type LLMCalls struct {
	Calls  uint64 `json:"calls"`
	Served uint64 `json:"served"`
	// Failed calls got an answer other than 200 or a 429 with a
	// retry-after, or none, on their last attempt: a call whose key
	// failed is retried on another key, up to LLMConfig.Retries times.
	Failed uint64 `json:"failed"`
	// Unfinished calls were still waiting for a key or a retry when the
	// window ended.
	Unfinished uint64 `json:"unfinished"`
	// Retried counts the attempts that failed for their key (no answer,
	// a 5xx, a 401 or 403) and whose call was tried again on another key.
	Retried     uint64 `json:"retried"`
	Attempts    uint64 `json:"attempts"`     // HTTP requests sent
	RateLimited uint64 `json:"rate_limited"` // 429s received
	// Other counts the attempts answered neither 200 nor 429, or not at
	// all (a transport error).
	Other uint64 `json:"other"`
	// RateLimitedShare is RateLimited / Attempts: the share of the calls
	// the provider received that it refused.
	RateLimitedShare float64 `json:"rate_limited_share"`
}

// LLMTokens sums the usage blocks of the served calls.
type LLMTokens struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Total      int64 `json:"total"`
}

// LLMLatency is over the served calls. Added is the time before the
// served attempt went out: waiting in the client, plus the attempts
// refused and the waits after them. Service is the served attempt's own
// time, the provider's (over loopback, for the mock); Total their sum.
//
// Unfinished is how long the unfinished calls had waited when the window
// ended: a client that leaves calls waiting longest has them there, not
// in Added.
type LLMLatency struct {
	Added      LatencySummary `json:"added"`
	Service    LatencySummary `json:"service"`
	Total      LatencySummary `json:"total"`
	Unfinished LatencySummary `json:"unfinished"`
}

// LLMKey is one key's share.
type LLMKey struct {
	Key         string `json:"key"` // the key, or for a long one (a secret) its start and last four characters
	Attempts    uint64 `json:"attempts"`
	Served      uint64 `json:"served"`
	RateLimited uint64 `json:"rate_limited"`
	Other       uint64 `json:"other"` // answered neither 200 nor 429, or not at all
	Tokens      int64  `json:"tokens"`
}

// clientTitle names a client of the llm scenario.
func clientTitle(pool string) string {
	if pool == "naive" {
		return "naive round robin (retry after Retry-After)"
	}
	return "crs scheduler (Limits, Lease WithCost, Settle)"
}

// report assembles the run's LLMReport once every worker has stopped.
func (r *llmRun) report(window, elapsed time.Duration, stats *mockprovider.Stats, clientChecks []Check, in *Interruption, provider string) *LLMReport {
	cfg, lc, k := r.cfg, r.cfg.LLM, &r.k
	lr := &LLMReport{
		Client: cfg.Pool, ClientTitle: r.title, Provider: redacted(provider), Mock: lc.Provider == "",
		Environment: environment(), Keys: len(r.keys), RPM: lc.RPM, TPM: lc.TPM, Workers: cfg.Workers,
		PromptDist: lc.Prompt.String(), MaxTokDist: lc.MaxTokens.String(), Seed: cfg.Seed,
		DurationNs: int64(cfg.Duration), WindowNs: int64(window), ElapsedNs: int64(elapsed),
		Interrupted: in, ProviderStats: stats,
	}
	if lr.Mock {
		lr.MockLatency = lc.Latency.String()
	}
	lr.Calls = LLMCalls{Calls: k.calls.Load(), Served: k.served.Load(), Failed: k.failed.Load(), Unfinished: k.unfinished.Load(),
		Retried: k.retried.Load()}
	for i := range k.keys {
		kc := &k.keys[i]
		u := LLMKey{
			Key: r.keyName(i), Attempts: kc.attempts.Load(), Served: kc.served.Load(),
			RateLimited: kc.rateLimited.Load(), Other: kc.other.Load(), Tokens: kc.tokens.Load(),
		}
		lr.PerKey = append(lr.PerKey, u)
		lr.Calls.Attempts += u.Attempts
		lr.Calls.RateLimited += u.RateLimited
		lr.Calls.Other += u.Other
		lr.Tokens.Prompt += kc.prompt.Load()
		lr.Tokens.Completion += kc.completion.Load()
		lr.Tokens.Total += u.Tokens
	}
	if lr.Calls.Attempts > 0 {
		lr.Calls.RateLimitedShare = float64(lr.Calls.RateLimited) / float64(lr.Calls.Attempts)
	}
	lr.Budgets, lr.Binding = budgets(lc, len(r.keys), window, int64(lr.Calls.Served), lr.Tokens.Total)
	for _, b := range lr.Budgets {
		if b.Name == lr.Binding {
			lr.BindingShare = b.Share
		}
	}
	lr.Latency = LLMLatency{
		Added:      summarise(k.added.Snapshot()),
		Service:    summarise(k.service.Snapshot()),
		Total:      summarise(k.total.Snapshot()),
		Unfinished: summarise(k.unfinishedWait.Snapshot()),
	}
	if s := k.firstErr.Load(); s != nil {
		lr.FirstError = *s
	}
	lr.Accounting = llmAccounting(lr, clientChecks)
	return lr
}

// MostlyFailed reports whether most of the run's calls failed: most
// calls ended failed, or most attempts got an error or no answer (calls
// whose keys all failed then mostly wait, for keys ejected, until the
// window ends). That is wrong keys, a wrong URL or a provider that is
// down: the run measured nothing about keeping limits, and crsload exits
// 1 after it.
func (lr *LLMReport) MostlyFailed() bool {
	q := lr.Calls
	return (q.Failed > 0 && 2*q.Failed >= q.Calls) || (q.Other > 0 && 2*q.Other >= q.Attempts)
}

// failedLine says that most calls failed, and how.
func (lr *LLMReport) failedLine() string {
	q := lr.Calls
	return fmt.Sprintf("most calls failed (%s of %s attempts got an error or no answer; %s calls served, %s failed): "+
		"check the keys, the URL and the provider; first error: %s",
		group(q.Other), group(q.Attempts), group(q.Served), group(q.Failed), or(lr.FirstError, "none recorded"))
}

// llmAccounting checks that every call and attempt was counted once and,
// with the mock, that the client's counts are the mock's: the mock is the
// referee of what was served and refused.
func llmAccounting(lr *LLMReport, clientChecks []Check) Accounting {
	var a Accounting
	add := func(name string, ok bool, format string, args ...any) {
		a.Checks = append(a.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	q := lr.Calls
	add("every call has exactly one outcome", q.Calls == q.Served+q.Failed+q.Unfinished,
		"%s calls = %s served + %s failed + %s unfinished", group(q.Calls), group(q.Served), group(q.Failed), group(q.Unfinished))
	add("every attempt has exactly one answer", q.Attempts == q.Served+q.RateLimited+q.Other && q.Retried <= q.Other,
		"%s attempts = %s served + %s 429s + %s other", group(q.Attempts), group(q.Served), group(q.RateLimited), group(q.Other))
	if s := lr.ProviderStats; s != nil {
		const agrees = "the mock's counts are the client's"
		if !lr.Mock {
			a.Checks = append(a.Checks, Check{Name: agrees, OK: true, Skipped: true,
				Detail: "-provider-stats: the provider may have other clients (processes on the same pool)"})
		} else if lr.Interrupted != nil {
			a.Checks = append(a.Checks, Check{Name: agrees, OK: true, Skipped: true,
				Detail: "interrupted: calls cut short may have been counted by one side only"})
		} else {
			t := s.Total
			add(agrees, t.Received == int64(q.Attempts) && t.Served == int64(q.Served) &&
				t.RateLimited == int64(q.RateLimited) && t.TotalTokens == lr.Tokens.Total && t.Aborted == 0,
				"mock: %s received, %s served, %s 429s, %s tokens, %d aborted; client: %s attempts, %s served, %s 429s, %s tokens",
				group(t.Received), group(t.Served), group(t.RateLimited), group(t.TotalTokens), t.Aborted,
				group(q.Attempts), group(q.Served), group(q.RateLimited), group(lr.Tokens.Total))
		}
		over := ""
		for _, ks := range s.Keys {
			if (s.RequestsPerMinute > 0 && ks.Served > ks.RequestsAllowed) || (s.TokensPerMinute > 0 && ks.TokensCharged > ks.TokensAllowed) {
				over += fmt.Sprintf(" %s (%d calls of %d, %d tokens of %d)", ks.Key, ks.Served, ks.RequestsAllowed, ks.TokensCharged, ks.TokensAllowed)
			}
		}
		add("no key spent more than its buckets allowed", over == "", "%s", strings.TrimSpace(or(over, "per the mock's Stats")))
	}
	a.Checks = append(a.Checks, clientChecks...)
	a.OK = true
	for _, c := range a.Checks {
		a.OK = a.OK && c.OK
	}
	return a
}

func ratio(n, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(n) / float64(of)
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// writeLLMText writes an llm run's report for a reader.
func writeLLMText(w io.Writer, lr *LLMReport) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "crsload: llm scenario, %s", lr.ClientTitle)
	if in := lr.Interrupted; in != nil {
		fmt.Fprintf(b, " (INTERRUPTED by %s at %s)", in.Cause, dur(in.AtNs))
	}
	fmt.Fprintln(b)
	provider := lr.Provider
	if lr.Mock {
		provider = "the mock provider at " + lr.Provider + ", latency " + lr.MockLatency
	}
	fmt.Fprintf(b, "  %s workers, %s keys of %s, to %s\n", group(lr.Workers), group(lr.Keys), limitsText(lr.RPM, lr.TPM), provider)
	fmt.Fprintf(b, "  calls: prompt %s tokens, max_tokens %s; window %s, the run took %s; seed %d\n",
		lr.PromptDist, lr.MaxTokDist, dur(lr.WindowNs), dur(lr.ElapsedNs), lr.Seed)

	writeLLMCalls(b, lr)

	fmt.Fprintf(b, "\nBudget (what the keys' buckets allowed over the window: Max + Max x window / minute, per key)\n")
	for _, bu := range lr.Budgets {
		mark := ""
		if bu.Name == lr.Binding {
			mark = "  (binding)"
		}
		fmt.Fprintf(b, "  %-9s %s of %s allowed: %s%s\n", bu.Name, group(bu.Spent), group(bu.Allowed), pct(bu.Share), mark)
	}

	writeProviderView(b, lr)

	fmt.Fprintf(b, "\nLatency of the served calls, and the wait of the unfinished ones\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \tcount\tmean\tp50\tp90\tp99\tmax\t\n")
	for _, row := range []struct {
		name string
		s    LatencySummary
	}{{"added (client + retries)", lr.Latency.Added}, {"provider (served call)", lr.Latency.Service}, {"total", lr.Latency.Total},
		{"unfinished: waited so far", lr.Latency.Unfinished}} {
		s := row.s
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.name, group(s.Count), dur(s.Mean), dur(s.P50), dur(s.P90), dur(s.P99), dur(s.Max))
	}
	tw.Flush()

	fmt.Fprintf(b, "\nPer key\n")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \tattempts\tserved\t429s\tother\ttokens\t\n")
	for _, u := range lr.PerKey {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t\n", u.Key, group(u.Attempts), group(u.Served), group(u.RateLimited), group(u.Other), group(u.Tokens))
	}
	tw.Flush()
	writeAccounting(b, lr.Accounting)
	_, err := io.WriteString(w, b.String())
	return err
}

func limitsText(rpm, tpm int64) string {
	var parts []string
	if rpm > 0 {
		parts = append(parts, group(rpm)+" rpm")
	}
	if tpm > 0 {
		parts = append(parts, group(tpm)+" tpm")
	}
	return strings.Join(parts, " / ")
}

// writeLLMComparison prints the two clients of -compare side by side.
// What a client served is shown with what it paid for it, its 429s and
// its latency p99: a client that sends regardless of the buckets may
// serve a few more calls, and the refusals and the tail are their cost.
func writeLLMComparison(w io.Writer, a, b *LLMReport) error {
	fmt.Fprintf(w, "\nSide by side: the same workload, each client on a fresh mock with the same limits\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \t%s\t%s\t\n", a.Client, b.Client)
	row := func(name string, f func(*LLMReport) string) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", name, f(a), f(b))
	}
	row("calls served", func(r *LLMReport) string { return group(r.Calls.Served) })
	row("paid: 429s received", func(r *LLMReport) string {
		return fmt.Sprintf("%s (%s of attempts)", group(r.Calls.RateLimited), pct(r.Calls.RateLimitedShare))
	})
	row("paid: total latency p99", func(r *LLMReport) string { return dur(r.Latency.Total.P99) })
	row("binding budget used", func(r *LLMReport) string { return pct(r.BindingShare) + " " + r.Binding })
	row("added latency p50", func(r *LLMReport) string { return dur(r.Latency.Added.P50) })
	row("added latency p99", func(r *LLMReport) string { return dur(r.Latency.Added.P99) })
	row("unfinished at the end", func(r *LLMReport) string { return group(r.Calls.Unfinished) })
	row("their wait so far, max", func(r *LLMReport) string { return dur(r.Latency.Unfinished.Max) })
	row("accounting", func(r *LLMReport) string {
		if r.Accounting.OK {
			return "OK"
		}
		return "FAILED"
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, llmVerdict(a, b))
	return err
}

// llmVerdict says in a sentence which client served more, and at what
// cost in 429s and latency beside the other's.
func llmVerdict(a, b *LLMReport) string {
	paid := func(r *LLMReport) string {
		return fmt.Sprintf("%s 429s (%s of its attempts) and a latency p99 of %s",
			group(r.Calls.RateLimited), pct(r.Calls.RateLimitedShare), dur(r.Latency.Total.P99))
	}
	if a.Calls.Served == b.Calls.Served {
		return fmt.Sprintf("  both served %s calls: %s paid %s; %s paid %s\n",
			group(a.Calls.Served), a.Client, paid(a), b.Client, paid(b))
	}
	more, less := a, b
	if b.Calls.Served > a.Calls.Served {
		more, less = b, a
	}
	extra := more.Calls.Served - less.Calls.Served
	return fmt.Sprintf("  %s served %s more calls than %s (%s more), paying %s;\n  %s paid %s\n",
		more.Client, group(extra), less.Client, pct(ratio(int64(extra), int64(less.Calls.Served))), paid(more),
		less.Client, paid(less))
}

// redacted is the provider's URL as a report shows it: without the
// password that a URL may carry.
func redacted(provider string) string {
	u, err := url.Parse(provider)
	if err != nil {
		return provider
	}
	return u.Redacted()
}

// writeLLMCalls writes the report's calls: their outcomes, and why most
// failed if they did.
func writeLLMCalls(b *strings.Builder, lr *LLMReport) {
	q := lr.Calls
	fmt.Fprintf(b, "\nCalls\n")
	fmt.Fprintf(b, "  served          %s\n", group(q.Served))
	fmt.Fprintf(b, "  429s received   %s  (%s of the %s attempts the provider received)\n", group(q.RateLimited), pct(q.RateLimitedShare), group(q.Attempts))
	fmt.Fprintf(b, "  failed          %s\n", group(q.Failed))
	fmt.Fprintf(b, "  unfinished      %s  (waiting for a key or a retry when the window ended)\n", group(q.Unfinished))
	if q.Retried > 0 {
		fmt.Fprintf(b, "  retried         %s  (attempts that failed for their key, tried again on another)\n", group(q.Retried))
	}
	if lr.FirstError != "" {
		fmt.Fprintf(b, "  first error: %s\n", lr.FirstError)
	}
	if lr.MostlyFailed() {
		fmt.Fprintf(b, "  %s\n", lr.failedLine())
	}
}

// writeProviderView writes the provider's own counters (-provider-stats).
func writeProviderView(b *strings.Builder, lr *LLMReport) {
	if s := lr.ProviderStats; s != nil && !lr.Mock {
		t := s.Total
		fmt.Fprintf(b, "\nThe provider's view (GET /stats: every client's calls, since the provider started %s ago)\n", dur(int64(s.Elapsed)))
		fmt.Fprintf(b, "  served          %s\n", group(t.Served))
		fmt.Fprintf(b, "  429s sent       %s  (%s of the %s calls received)\n", group(t.RateLimited), pct(ratio(t.RateLimited, t.Received)), group(t.Received))
		if t.RequestsAllowed > 0 {
			fmt.Fprintf(b, "  requests  %s of %s allowed: %s\n", group(t.Served), group(t.RequestsAllowed), pct(ratio(t.Served, t.RequestsAllowed)))
		}
		if t.TokensAllowed > 0 {
			fmt.Fprintf(b, "  tokens    %s of %s allowed: %s\n", group(t.TotalTokens), group(t.TokensAllowed), pct(ratio(t.TotalTokens, t.TokensAllowed)))
		}
	}
}
