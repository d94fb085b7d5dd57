// Command llmgateway is a small LLM gateway: a reverse proxy in front of
// an OpenAI-compatible provider that spreads calls over several API keys
// and keeps each key's requests and tokens per minute with crs, so that
// the provider never has to refuse a call.
//
// For each request it first checks the body (a JSON object; for chat
// completions a non-empty "messages"; max_tokens and n in range; at most
// 8 MB), so that a malformed call costs no budget. It then estimates the
// call's tokens from the body (the prompt's text and the body's other
// text (tools, a completions prompt, an input), a quarter of its bytes,
// plus -image-tokens for each image, plus max_tokens for each of the n
// completions asked for: never less than the provider reserves), leases
// a key whose buckets cover that estimate (waiting for one if none
// does), sets the key in the Authorization header and forwards the
// call. When the answer comes back it settles the lease to the tokens
// the call really spent, read from the answer's usage block, and takes
// the provider's x-ratelimit-limit-*, -remaining-* and -reset-* headers
// in the same step (Lease.Reconcile, see reconcile): a limit the
// provider states otherwise becomes the key's, and the remaining figure
// corrects the key's bucket, whether the provider refunds the unused
// estimate or keeps it. A key's bucket taken from full refills from the
// next answer, when the provider has admitted a call
// (config.Limit.Admission).
//
// A key can refuse or fail. A 429 rests the key for its Retry-After, and
// the call goes to another key if one has room for it at once; otherwise
// the 429 is passed on. No answer, a 5xx, a 401 or a 403 is a failure of
// the key: Lease.Fail, which feeds the scheduler's Ejection (3 in a row
// eject a key for 2 s, the n-th ejection for n x 2 s, at most a minute:
// -eject, -eject-base, -eject-max), and the call is tried on another
// key. A call meets at most 1 + -retries (2) keys. A key that failed
// takes one call at a time until one is answered. A call the provider
// refused without running it (a 4xx other than 429, or a 5xx) is
// settled to a request and no tokens, what the provider counts for it.
//
// Tenants and priorities: a call may name its tenant in X-Tenant (a
// team, an API consumer: 1 to 64 letters, digits, '.', '_', '-') and its
// priority in X-Priority (a whole number from -9 to 9, higher first;
// interactive calls before batch ones). When keys are short, a freed
// key or refilled budget goes to the highest priority waiting, and
// within one priority the tenants share the tokens by weight; without
// the headers a call is the default tenant's, at priority 0. -tenants
// gives the weights and each tenant's own budget of tokens per minute,
// spent with the key's (search=3:10000,batch=1: search has weight 3 and
// at most 10,000 tokens a minute, batch weight 1): with it, X-Tenant must
// name one of them. A header out of range, or an unknown tenant, is a
// 400 that costs no budget. Neither header goes on to the provider.
//
//	curl -s localhost:8080/v1/chat/completions -H 'X-Tenant: search' -H 'X-Priority: 5' -d '{"messages": ...}'
//
// What it reads: a JSON answer with a "usage" block, the shape of
// chat completions and completions. A streamed answer (text/event-stream),
// or any other body, is passed on as it comes and keeps the estimate
// charged: reading its usage would mean parsing the stream. The estimate
// is never below what the provider charges up front, so a key is never
// overdrawn either way; it only uses less of its budget.
//
//	LLMGATEWAY_KEYS=sk-1,sk-2 go run ./examples/llmgateway -upstream https://api.openai.com/v1 -rpm 500 -tpm 200000
//	go run ./cmd/mockprovider -keys 2 -rpm 600 -tpm 40000      # a provider to try it on
//	LLMGATEWAY_KEYS=sk-mock-1,sk-mock-2 go run ./examples/llmgateway -upstream http://127.0.0.1:PORT
//	curl -s localhost:8080/v1/chat/completions -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50}'
//
// -upstream takes the provider's base URL with or without its /v1, as
// OpenAI's clients do. The keys come from the environment
// (LLMGATEWAY_KEYS), never from the command line, which other users of
// the machine can read. The server bounds how long a caller may take to
// send its request (30 s) and how long a call may take in all, waiting
// for a key included (10 minutes). The gateway does not authenticate its
// own callers: put it behind what does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
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

func main() {
	flag.Usage = usage
	addr := flag.String("addr", "127.0.0.1:8080", "`address` to serve on")
	flag.StringVar(addr, "listen", "127.0.0.1:8080", "the same as -addr (its former name)")
	upstream := flag.String("upstream", "", "the provider's base `URL`, with or without its /v1, such as https://api.openai.com/v1")
	rpm := flag.Int64("rpm", 600, "requests per minute per key (0: no limit)")
	tpm := flag.Int64("tpm", 40000, "tokens per minute per key (0: no limit)")
	images := flag.Int64("image-tokens", defaultImageTokens, "what one image counts in a call's estimate: the most your model charges for one")
	retries := flag.Int("retries", DefaultRetries, "other keys a call is tried on after its key failed or refused it")
	ej := DefaultEjection
	flag.IntVar(&ej.ConsecutiveFailures, "eject", ej.ConsecutiveFailures, "eject a key after this many failures in a row (no answer, 5xx, 401, 403); 0: never")
	flag.DurationVar(&ej.BaseTime, "eject-base", ej.BaseTime, "a key's first ejection; the n-th lasts n times this")
	flag.DurationVar(&ej.MaxTime, "eject-max", ej.MaxTime, "the longest ejection (0: no cap)")
	tenantsFlag := flag.String("tenants", "", "the tenants X-Tenant may name, `NAME=WEIGHT[:TPM],...`: each one's weight and own tokens per\nminute (search=3:10000,batch=1); empty: any name, weight 1, no budget of its own")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		log.Fatalf("llmgateway: -upstream %q: want a URL such as https://api.openai.com/v1 (see -h)", *upstream)
	}
	keys := keysFrom(os.Getenv("LLMGATEWAY_KEYS"), *rpm, *tpm)
	if len(keys) == 0 {
		log.Fatal("llmgateway: no keys: set LLMGATEWAY_KEYS=key1,key2,... (see -h)")
	}
	if *retries < 0 || ej.Validate() != nil {
		log.Fatal("llmgateway: -retries, -eject: want >= 0, and -eject-base > 0 with ejection on (see -h)")
	}
	tenants, err := ParseTenants(*tenantsFlag)
	if err != nil {
		log.Fatalf("llmgateway: -tenants: %v (see -h)", err)
	}
	g, err := NewGateway(u, keys, Options{Ejection: &ej, Tenants: tenants})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	g.ImageTokens, g.Retries = *images, *retries
	log.Printf("llmgateway: %s, proxying %s on http://%s", plural(len(keys), "key"), u.Redacted(), *addr)
	if err := server(*addr, g).ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
	}
}

// server serves h on addr. A caller has 30 s to send its request, so
// that bodies trickled a byte at a time cannot hold connections open; a
// call may take 10 minutes in all, its wait for a key included; an idle
// connection stays 2.
func server(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr: addr, Handler: h,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 10 * time.Minute, IdleTimeout: 2 * time.Minute,
	}
}

// keysFrom reads LLMGATEWAY_KEYS: keys separated by commas, blanks
// skipped, named key-1, key-2, ... in the order given.
func keysFrom(env string, rpm, tpm int64) []Key {
	var keys []Key
	for _, secret := range strings.Split(env, ",") {
		if secret = strings.TrimSpace(secret); secret != "" {
			keys = append(keys, Key{Name: fmt.Sprintf("key-%d", len(keys)+1), Secret: secret, RPM: rpm, TPM: tpm})
		}
	}
	return keys
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func usage() { printUsage(flag.CommandLine.Output(), flag.CommandLine) }

func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage: LLMGATEWAY_KEYS=key1,key2,... llmgateway -upstream URL [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "A reverse proxy in front of an OpenAI-compatible provider that spreads calls")
	fmt.Fprintln(w, "over the keys in LLMGATEWAY_KEYS (comma-separated; read from the environment,")
	fmt.Fprintln(w, "never the command line) and keeps each key's -rpm and -tpm.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "A call may name its tenant in the X-Tenant header and its priority in X-Priority")
	fmt.Fprintln(w, "(-9 to 9, higher served first; default 0): when keys are short, higher priorities go")
	fmt.Fprintln(w, "first, and tenants share the tokens by their -tenants weights. A bad header is a 400.")
	fmt.Fprintln(w)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
