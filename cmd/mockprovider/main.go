// Command mockprovider serves a mock LLM provider on a local port: the
// chat-completions shape of OpenAI's API, with per-key requests and tokens
// per minute enforced by token buckets, 429s with Retry-After and
// OpenAI's x-ratelimit-* headers. Point any OpenAI-compatible client at
// it to see how it keeps a provider's limits.
//
//	go run ./cmd/mockprovider -keys 4 -rpm 600 -tpm 40000
//	go run ./cmd/mockprovider -h        # every flag, on stdout
//
// It prints its URL and its keys, then serves until SIGINT or SIGTERM,
// and prints each key's counters when it stops (a second signal ends it
// at once). The counters are also at GET /stats, as JSON, while it runs:
//
//	curl -s $URL/v1/chat/completions -H "Authorization: Bearer sk-mock-1" \
//	  -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50}'
//	curl -s $URL/stats
//
// How calls are charged and answered is documented in the
// harness/mockprovider package (go doc ./harness/mockprovider): a call
// is admitted on its prompt plus max_tokens, and settled to its usage
// when it ends, unless -keep-estimate.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/crsched/crs/harness/mockprovider"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command, minus the process: it serves until ctx ends or a
// SIGINT or SIGTERM arrives, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, addr, status := parse(args, stdout, stderr)
	if status >= 0 {
		return status
	}
	p, err := mockprovider.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%v (see -h)\n", err)
		return 2
	}
	// The first signal stops the server; after it the signals' default
	// action is back, so a second one ends a slow shutdown at once.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := mockprovider.Listen(addr, p)
	if err != nil {
		fmt.Fprintf(stderr, "mockprovider: %v\n", err)
		return 1
	}
	banner(stdout, s.URL, cfg)

	<-ctx.Done()
	stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "mockprovider: shutdown: %v\n", err)
	}
	report(stdout, s.Stats())
	return 0
}

// parse reads the flags into the provider's Config and the address to
// listen on; status is -1 to go on, or the exit status (-h, a bad flag).
func parse(args []string, stdout, stderr io.Writer) (cfg mockprovider.Config, addr string, status int) {
	fs := flag.NewFlagSet("mockprovider", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keys := fs.Int("keys", 4, "`N` API keys, named sk-mock-1, sk-mock-2, ...")
	fs.Int64Var(&cfg.RequestsPerMinute, "rpm", 600, "requests per minute per key (0: no limit)")
	fs.Int64Var(&cfg.TokensPerMinute, "tpm", 40000, "tokens per minute per key (0: no limit)")
	fs.StringVar(&addr, "addr", "127.0.0.1:0", "`address` to listen on (port 0 picks a free one)")
	latency := fs.String("latency", "fixed:0", "how long a call takes: fixed:D or uniform:MIN-MAX")
	fs.BoolVar(&cfg.OmitResets, "omit-resets", false, "leave the x-ratelimit-reset-* headers out, as Azure OpenAI does")
	lag := fs.String("admission-lag", "fixed:0", "how long a call waits before it is admitted or refused: fixed:D or uniform:MIN-MAX")
	fs.Int64Var(&cfg.DefaultMaxTokens, "max-tokens", mockprovider.DefaultMaxTokens, "max_tokens of a request that gives none")
	fs.BoolVar(&cfg.KeepEstimate, "keep-estimate", false, "keep each call charged its estimate (prompt + max_tokens) instead of settling it to its usage")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the completion lengths and latencies")
	failKeys := fs.String("fail-keys", "", "`keys` (sk-mock-2,...) that answer 500 to every call: dead keys, for a client to route around")
	fs.Float64Var(&cfg.PromptFactor, "prompt-factor", 1, "count a prompt as this `factor` times a quarter of its bytes, as a tokenizer that counts\notherwise than a client's rule of thumb (1.5: half as much again)")
	fs.BoolVar(&cfg.ReportBeforeRefund, "report-before-refund", false, "give a served call's x-ratelimit-remaining-* as they stood before its refund")
	fs.DurationVar(&cfg.Change.At, "change-at", 0, "change the limits to -change-rpm and -change-tpm this long after the start (0: never)")
	fs.Int64Var(&cfg.Change.RequestsPerMinute, "change-rpm", 0, "with -change-at: the new requests per minute (0: kept)")
	fs.Int64Var(&cfg.Change.TokensPerMinute, "change-tpm", 0, "with -change-at: the new tokens per minute (0: kept)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return cfg, addr, 0
		}
		fmt.Fprintf(stderr, "mockprovider: %v (see -h)\n", err)
		return cfg, addr, 2
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case *keys < 1:
		err = fmt.Errorf("-keys %d: want at least 1", *keys)
	}
	if err == nil {
		cfg.Latency, err = mockprovider.ParseLatency(*latency)
	}
	if err == nil {
		cfg.AdmissionLag, err = mockprovider.ParseLatency(*lag)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mockprovider: %v (see -h)\n", err)
		return cfg, addr, 2
	}
	for i := 1; i <= *keys; i++ {
		cfg.Keys = append(cfg.Keys, "sk-mock-"+strconv.Itoa(i))
	}
	if *failKeys != "" {
		cfg.FailKeys = strings.Split(*failKeys, ",")
	}
	return cfg, addr, -1
}

// banner prints the URL, the limits, the keys and the behaviours asked
// for.
func banner(w io.Writer, url string, cfg mockprovider.Config) {
	fmt.Fprintf(w, "mockprovider: %s (POST /v1/chat/completions, GET /stats)\n", url)
	fmt.Fprintf(w, "limits per key: %s requests/min, %s tokens/min; latency %v\n", limit(cfg.RequestsPerMinute), limit(cfg.TokensPerMinute), cfg.Latency)
	if cfg.KeepEstimate {
		fmt.Fprintln(w, "a call is charged prompt + max_tokens")
	} else {
		fmt.Fprintln(w, "a call is admitted on prompt + max_tokens and settled to its usage")
	}
	for _, k := range cfg.Keys {
		fmt.Fprintf(w, "key %s\n", k)
	}
	if len(cfg.FailKeys) > 0 {
		fmt.Fprintf(w, "answering 500 to every call: %s\n", strings.Join(cfg.FailKeys, ", "))
	}
	if cfg.PromptFactor != 1 && cfg.PromptFactor != 0 {
		fmt.Fprintf(w, "a prompt counts %g times a quarter of its bytes\n", cfg.PromptFactor)
	}
	if cfg.ReportBeforeRefund {
		fmt.Fprintln(w, "a served call's remaining figures are taken before its refund")
	}
	if cfg.AdmissionLag.Max > 0 {
		fmt.Fprintf(w, "a call waits %v before it is admitted\n", cfg.AdmissionLag)
	}
	if c := cfg.Change; c.At > 0 {
		fmt.Fprintf(w, "at %v the limits change to %s requests/min, %s tokens/min\n", c.At,
			limit(cmp.Or(c.RequestsPerMinute, cfg.RequestsPerMinute)), limit(cmp.Or(c.TokensPerMinute, cfg.TokensPerMinute)))
	}
}

func limit(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage: mockprovider [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Serves a mock OpenAI-compatible chat-completions API on a local port, with")
	fmt.Fprintln(w, "per-key requests and tokens per minute, until SIGINT or SIGTERM.")
	fmt.Fprintln(w)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// report prints each key's counters and the share of its token budget
// spent.
func report(w io.Writer, s mockprovider.Stats) {
	fmt.Fprintf(w, "mockprovider: stopped after %v; %d unauthorized calls\n", s.Elapsed.Round(time.Millisecond), s.Unauthorized)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "key\tserved\t429s\ttoo large\t400s\t500s\ttokens spent\ttokens allowed\tshare\t")
	for _, k := range append(s.Keys, s.Total) {
		name, share := k.Key, "-"
		if name == "" {
			name = "total"
		}
		if k.TokensAllowed > 0 {
			share = fmt.Sprintf("%.1f%%", 100*float64(k.TotalTokens)/float64(k.TokensAllowed))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", name, k.Served, k.RateLimited, k.TooLarge, k.BadRequests, k.ServerErrors, k.TotalTokens, k.TokensAllowed, share)
	}
	tw.Flush()
}
