package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// DefaultRetries is Gateway.Retries as NewGateway sets it: a call meets
// at most three keys.
const DefaultRetries = 2

// DefaultEjection is the keys' ejection unless Options say otherwise: 3
// failures in a row (no answer, a 5xx, a 401 or 403) take a key out for
// 2 s, its n-th ejection for n x 2 s, at most a minute, and never more
// than half the keys at once.
var DefaultEjection = config.Ejection{ConsecutiveFailures: 3, BaseTime: 2 * time.Second, MaxTime: time.Minute, MaxEjectedShare: 0.5}

// gateRest is how long a key the gate turns away rests: long enough that
// the waiting calls go to other keys, short against a probe's answer.
const gateRest = 100 * time.Millisecond

// Options are a Gateway's settings beyond its upstream and keys.
type Options struct {
	// Clock is the scheduler's; nil is the system's (tests replace it).
	Clock config.Clock
	// Ejection takes failing keys out; nil is DefaultEjection, and a zero
	// Ejection turns it off.
	Ejection *config.Ejection
	// Client makes the upstream calls; nil is a client whose attempts
	// wait at most 5 minutes for the answer's headers.
	Client *http.Client
	// Tenants are the tenants X-Tenant may name, with their weights and
	// budgets; shares are counted in tokens. nil leaves the set open:
	// any valid name, each of weight 1 and no budget of its own, kept
	// for the gateway's life (so let only trusted callers name one).
	Tenants map[string]config.Tenant
}

// Gateway is the proxy, an http.Handler.
type Gateway struct {
	// ImageTokens is what each image of a request counts in its estimate;
	// 0 means defaultImageTokens. Set it before serving.
	ImageTokens int64
	// Retries is how many other keys a call is tried on after its key
	// failed (no answer, a 5xx, a 401 or 403), or refused it with a 429
	// while another key has room for it at once. Set it before serving.
	Retries int

	sched    *scheduler.Scheduler[Key, string]
	keys     int
	upstream *url.URL
	client   *http.Client
	gate     keyGate
	tenants  map[string]config.Tenant // nil: any tenant (Options.Tenants)
}

// NewGateway proxies to upstream with keys.
func NewGateway(upstream *url.URL, keys []Key, o Options) (*Gateway, error) {
	ej := DefaultEjection
	if o.Ejection != nil {
		ej = *o.Ejection
	}
	if err := checkTenants(o.Tenants); err != nil {
		return nil, err
	}
	tenants := maps.Clone(o.Tenants)
	cfg := config.Config[Key, string]{
		// Every key ranks the same, so the key with the most budget left
		// goes first.
		Comparator:    func(a, b Key) int { return 0 },
		KeyFunc:       func(k Key) string { return k.Name },
		AcquirePolicy: config.Shared, // a key takes any number of calls at once
		Limits:        limits,
		Ejection:      ej,
		Clock:         o.Clock,
		// A tenant's share is the tokens its calls spent, not their
		// number.
		ShareBy: "tokens",
	}
	if tenants != nil { // without, every tenant has weight 1 and no budget
		cfg.Tenants = func(name string) config.Tenant { return tenants[name] }
	}
	sched, err := scheduler.New(cfg)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := sched.Add(k); err != nil {
			sched.Shutdown()
			return nil, err
		}
	}
	client := o.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 5 * time.Minute
		client = &http.Client{Transport: tr}
	}
	return &Gateway{Retries: DefaultRetries, sched: sched, keys: len(keys), upstream: upstream, client: client,
		gate: keyGate{state: map[string]uint8{}}, tenants: tenants}, nil
}

// limits are a key's budgets, as the provider states them: a call costs
// 1 request (the cost does not name it) and its tokens.
func limits(k Key) []config.Limit {
	var ls []config.Limit
	// The provider counts a call when it admits it (Admission): a bucket
	// taken from full refills from the next answer.
	if k.RPM > 0 {
		ls = append(ls, config.Limit{Name: "requests", Max: k.RPM, Per: time.Minute, Admission: true})
	}
	if k.TPM > 0 {
		ls = append(ls, config.Limit{Name: "tokens", Max: k.TPM, Per: time.Minute, Admission: true})
	}
	return ls
}

// Close stops the scheduler; calls waiting for a key fail.
func (g *Gateway) Close() { g.sched.Shutdown() }

// ServeHTTP checks the request (its body, X-Tenant and X-Priority)
// before it takes any budget, so that a malformed one costs nothing,
// then tries keys until an answer is worth passing on (see attempt) and
// passes it on.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, status, err := readRequest(w, r)
	if err != nil {
		http.Error(w, "llmgateway: "+err.Error(), status)
		return
	}
	caller, err := g.whoOf(r)
	if err != nil {
		http.Error(w, "llmgateway: "+err.Error(), http.StatusBadRequest)
		return
	}
	images := g.ImageTokens
	if images <= 0 {
		images = defaultImageTokens
	}
	est := estimate(body, images)
	var avoid []string
	var last *answer // passed on if no key takes the retry
	for {
		ctx := r.Context()
		if last != nil && last.resp != nil && last.resp.StatusCode == http.StatusTooManyRequests {
			// A 429 is retried only on a key with room now: waiting
			// for one is the caller's to decide, on the Retry-After.
			now, cancel := context.WithCancel(ctx)
			cancel()
			ctx = now
		}
		c, err := g.lease(ctx, caller.options(est), est, avoid)
		switch {
		case err != nil && last != nil:
			g.pass(w, last)
		case err != nil:
			refuse(w, r, err)
		}
		if err != nil {
			return
		}
		last.discard()
		last = g.attempt(r, body, c)
		if !last.retry || len(avoid) >= g.Retries || len(avoid)+1 >= g.keys || r.Context().Err() != nil {
			g.pass(w, last)
			return
		}
		avoid = append(avoid, c.lease.Value().Name)
	}
}

// refuse answers a call that got no key.
func refuse(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, crserrors.ErrCostExceedsLimits):
		http.Error(w, "llmgateway: the call needs more tokens than any key's limit, or its tenant's", http.StatusBadRequest)
	case r.Context().Err() == nil: // otherwise the caller has gone
		http.Error(w, "llmgateway: "+err.Error(), http.StatusServiceUnavailable)
	}
}

// lease leases a key with opts, whose cost is est, other than the keys
// in avoid and other than a failed key already being probed (keyGate):
// such a key rests for gateRest, and the lease is asked again.
func (g *Gateway) lease(ctx context.Context, opts []scheduler.LeaseOption, est int64, avoid []string) (*call, error) {
	for {
		l, err := g.sched.Lease(ctx, opts...)
		if err != nil {
			return nil, err
		}
		name := l.Value().Name
		if ok, probe := g.gate.admit(name, avoid); ok {
			return &call{lease: l, estimate: est, probe: probe}, nil
		}
		// Not settled: a settlement is an answer (config.Limit.Admission),
		// and the provider never saw this call; the next answer's figures
		// give its estimate back (Lease.Reconcile).
		if err := l.Cooldown(gateRest); err != nil {
			return nil, err
		}
	}
}

// call is one attempt's lease, which ends exactly once: when its answer
// is read, or once the answer's body is passed on.
type call struct {
	lease    scheduler.Lease[Key, string]
	estimate int64 // the tokens the lease was granted on
	probe    bool  // the attempt probes a key that failed (keyGate)
	ended    bool
}

// end releases the lease; whatever the call was charged stays charged.
func (c *call) end() {
	if !c.ended {
		c.ended = true
		_ = c.lease.Release() // only fails if the lease has ended already
	}
}

// answer is one attempt's outcome: the provider's answer (resp nil and
// err set if none came), and whether the call may go to another key.
type answer struct {
	c     *call
	resp  *http.Response
	err   error
	body  []byte // the answer's body when it was read for its usage
	retry bool
}

// discard drops an answer that is not passed on.
func (a *answer) discard() {
	if a != nil && a.resp != nil {
		a.resp.Body.Close()
	}
	if a != nil {
		a.c.end()
	}
}

// attempt sends the call with c's key and ends c's lease as the answer
// says. No answer, a 5xx, a 401 or a 403 is a failure of the key: Fail,
// toward its ejection, and the call may go to another key. A 429 rests
// the key for its Retry-After, and the call may go to another key with
// room. A call the provider answered without running it (a 4xx other
// than 429, a 5xx) is settled to a request and no tokens; one with no
// answer keeps its estimate, since the provider may have run it. A JSON
// 200 is settled to its usage; any other answer keeps the estimate, and
// its lease lasts until its body is passed on.
func (g *Gateway) attempt(r *http.Request, body []byte, c *call) *answer {
	name := c.lease.Value().Name
	resp, err := g.client.Do(g.outgoing(r, body, c))
	if err != nil && r.Context().Err() != nil {
		return &answer{c: c, err: err} // the caller has gone: not the key's fault
	}
	if err != nil {
		log.Printf("llmgateway: %s: %v", name, err)
		g.gate.done(name, c.probe, true)
		if c.lease.Fail() == nil {
			c.ended = true
		}
		return &answer{c: c, err: err, retry: true}
	}
	a := &answer{c: c, resp: resp}
	status := resp.StatusCode
	fault := status >= 500 || status == http.StatusUnauthorized || status == http.StatusForbidden
	g.gate.done(name, c.probe, fault)
	switch {
	case status == http.StatusTooManyRequests:
		// The provider charged the refused call nothing.
		reconcile(c, config.Cost{"requests": 0, "tokens": 0}, resp.Header)
		if c.lease.Cooldown(retryAfter(resp.Header)) == nil {
			c.ended = true
		}
		a.retry = true
	case status >= 400:
		reconcile(c, config.Cost{"tokens": 0}, resp.Header)
		if fault && c.lease.Fail() == nil {
			c.ended = true
		}
		a.retry = fault
	case status == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
		g.readUsage(a)
		return a
	default:
		reconcile(c, nil, resp.Header)
		return a // the lease ends once the body is passed on
	}
	c.end()
	return a
}

// readUsage reads a JSON answer for its usage and settles the call to
// it. An answer too long to read is passed on whole, with the estimate
// kept charged.
func (g *Gateway) readUsage(a *answer) {
	resp, c := a.resp, a.c
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		resp.Body.Close()
		a.resp, a.err = nil, err
		c.end()
		return
	}
	if int64(len(body)) > maxBody { // too long to read for its usage: pass it on whole
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		reconcile(c, nil, resp.Header)
		return
	}
	resp.Body.Close()
	a.body = body
	var spent config.Cost
	if used := usageOf(body); used >= 0 {
		spent = config.Cost{"tokens": used}
	}
	reconcile(c, spent, resp.Header)
	c.end()
}

// hopHeaders are the headers of one connection, which a proxy does not
// forward (RFC 9110, 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// outgoing is the request to the provider: the caller's, with the key's
// Authorization, to the upstream's path (see target).
func (g *Gateway) outgoing(r *http.Request, body []byte, c *call) *http.Request {
	out, _ := http.NewRequestWithContext(r.Context(), r.Method, target(g.upstream, r.URL), bytes.NewReader(body))
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	out.Header.Del(TenantHeader) // the gateway's, not the provider's
	out.Header.Del(PriorityHeader)
	out.Header.Set("Authorization", "Bearer "+c.lease.Value().Secret)
	// The answer's usage must be readable: let the Transport negotiate
	// compression, and undo it, itself.
	out.Header.Del("Accept-Encoding")
	return out
}

// target is the provider's URL for a call to in: OpenAI clients take a
// base URL ending in /v1 (https://api.openai.com/v1) and call /v1/...
// paths on a gateway, so a /v1 that ends the upstream's path is not
// repeated. The upstream's query, if any, comes first.
func target(upstream, in *url.URL) string {
	u := *upstream
	base := strings.TrimRight(u.Path, "/")
	if strings.HasPrefix(in.Path, "/v1/") || in.Path == "/v1" {
		base = strings.TrimSuffix(base, "/v1")
	}
	u.Path, u.RawPath = base+in.Path, ""
	switch {
	case u.RawQuery == "":
		u.RawQuery = in.RawQuery
	case in.RawQuery != "":
		u.RawQuery += "&" + in.RawQuery
	}
	return u.String()
}

// pass passes an answer on to the caller, and then ends its lease.
func (g *Gateway) pass(w http.ResponseWriter, a *answer) {
	defer a.c.end()
	if a.resp == nil {
		http.Error(w, "llmgateway: the provider could not be reached", http.StatusBadGateway)
		return
	}
	defer a.resp.Body.Close()
	h := w.Header()
	for k, v := range a.resp.Header {
		h[k] = v
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	if a.body != nil {
		h.Set("Content-Length", strconv.Itoa(len(a.body)))
		w.WriteHeader(a.resp.StatusCode)
		_, _ = w.Write(a.body)
		return
	}
	h.Del("Content-Length")
	w.WriteHeader(a.resp.StatusCode)
	copyFlushing(w, a.resp.Body)
}

// copyFlushing copies an answer's body to the caller as it comes, so
// that a stream (text/event-stream) reaches it event by event.
func copyFlushing(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// reconcile settles the call to spent (nil: its estimate stays charged)
// and takes the provider's figures from its answer's headers, in one
// step (Lease.Reconcile): a limit the provider states otherwise becomes
// the key's; the remaining figure lowers the key's bucket, or raises it
// to the figure less the estimates of the key's other calls out, which
// the provider may not have counted yet.
func reconcile(c *call, spent config.Cost, h http.Header) {
	if err := c.lease.Reconcile(spent, reported(c.lease.Value(), h)); err != nil {
		log.Printf("llmgateway: %s: reconcile: %v", c.lease.Value().Name, err)
	}
}

// reported reads OpenAI's x-ratelimit-limit-*, -remaining-* and
// -reset-* for the limits key has; a limit with neither a limit nor a
// remaining figure is left out.
func reported(k Key, h http.Header) map[string]scheduler.Reported {
	out := map[string]scheduler.Reported{}
	for _, l := range limits(k) {
		r := scheduler.Reported{Remaining: count(h.Get("x-ratelimit-remaining-" + l.Name)), Limit: max(count(h.Get("x-ratelimit-limit-"+l.Name)), 0)}
		if d, err := time.ParseDuration(h.Get("x-ratelimit-reset-" + l.Name)); err == nil && d > 0 {
			r.Reset = d
		}
		if r.Remaining >= 0 || r.Limit > 0 {
			out[l.Name] = r
		}
	}
	return out
}

// count reads a header's whole number of units; -1 if it is absent or
// not one.
func count(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > config.MaxUnits {
		return -1
	}
	return n
}

// keyGate keeps a key whose last attempt failed to one attempt at a
// time, a probe, until an attempt on it is answered again. Without it, a
// dead key, whose budget its refunded failures keep full, would take a
// call from every waiting caller each time its ejection ended.
type keyGate struct {
	mu    sync.Mutex
	state map[string]uint8 // by key name; absent: healthy
}

const (
	keySuspect uint8 = iota + 1 // its last attempt failed; no probe out
	keyProbed                   // its last attempt failed; a probe is out
)

// admit reports whether a call may go out on key, not one of avoid, and
// whether it goes as the key's probe.
func (g *keyGate) admit(key string, avoid []string) (ok, probe bool) {
	if slices.Contains(avoid, key) {
		return false, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.state[key] {
	case 0:
		return true, false
	case keySuspect:
		g.state[key] = keyProbed
		return true, true
	}
	return false, false
}

// done records an attempt's answer on key: a failure of the key makes it
// suspect, any other answer healthy.
func (g *keyGate) done(key string, probe, fault bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !fault:
		delete(g.state, key)
	case probe || g.state[key] == 0:
		g.state[key] = keySuspect
	}
}
