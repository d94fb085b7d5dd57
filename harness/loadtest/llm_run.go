package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/mockprovider"
)

// llmCounters are what the llm scenario's workers count, lock-free.
type llmCounters struct {
	calls, served, failed, unfinished atomic.Uint64
	// retried counts the attempts that failed for their key and were
	// tried again on another.
	retried atomic.Uint64
	// waiting counts calls between their start and their answer's
	// attempt going out: in the client's queue, or waiting out a 429.
	waiting, sending gauge
	keys             []llmKeyCounters
	// added is a served call's time before its last attempt went out
	// (queueing in the client, and earlier attempts refused with their
	// waits); service that attempt's own time; total their sum.
	added, service, total Histogram
	// unfinishedWait is how long each unfinished call had waited when
	// the window ended: the tail the served calls' latency leaves out.
	unfinishedWait Histogram
	firstErr       atomic.Pointer[string]
	// promptRatio is the largest ratio seen of the provider's count of a
	// prompt (its usage) to the client's (the mock's rule), as the bits
	// of a float64; 0 before the first answer.
	promptRatio atomic.Uint64
}

type llmKeyCounters struct {
	attempts, served, rateLimited, other atomic.Uint64
	prompt, completion, tokens           atomic.Int64
}

// llmRun is one run of the llm scenario with one client.
type llmRun struct {
	cfg    Config
	keys   []string
	client LLMClient
	title  string // the client's, for the report
	http   *llmHTTP
	k      llmCounters
	// ctx bounds the calls (a signal ends it); window ends at the end of
	// the measured window too: no call is sent after it, and calls still
	// waiting for their key or a retry then end unfinished.
	ctx, window context.Context
}

// runLLM runs the llm scenario with the client cfg.Pool names: crs,
// naive, or ext's.
func runLLM(ctx context.Context, cfg Config, ext *Extension, progress *Progress) (*Report, error) {
	lc := cfg.LLM
	keys := lc.keys(cfg.Resources)
	// The window starts before the mock does, so that the budget it
	// allows over the window is never less than what the mock's buckets
	// allowed.
	start := time.Now()
	mock, url, err := startMock(cfg, keys)
	if err != nil {
		return nil, err
	}
	client, title, err := newLLMClient(ctx, cfg, ext, keys)
	if err != nil {
		if mock != nil {
			mock.Close()
		}
		return nil, err
	}
	run := &llmRun{cfg: cfg, keys: keys, client: client, title: title, http: newLLMHTTP(url, lc.Model, cfg.Workers), ctx: ctx}
	run.k.keys = make([]llmKeyCounters, len(keys))
	window, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer cancel()
	run.window = window

	var wg sync.WaitGroup
	// A signal stops the starting of workers too: those started see the
	// window end, and the report covers what they did.
	for i := 0; i < cfg.Workers && ctx.Err() == nil; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			run.worker(id)
		}(i)
	}
	stopProgress := run.showProgress(progress, start)
	<-window.Done()
	end := time.Now()
	if deadline, _ := window.Deadline(); end.After(deadline) {
		end = deadline
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	run.http.close()
	stats, checks := run.finish(mock, url)

	var in *Interruption
	if ctx.Err() != nil {
		in = &Interruption{Cause: interruptCause(context.Cause(ctx)), AtNs: int64(end.Sub(start))}
	}
	lr := run.report(end.Sub(start), elapsed, stats, checks, in, url)
	return &Report{
		Pool: cfg.Pool, PoolTitle: lr.ClientTitle, Config: configReport(cfg), Environment: lr.Environment,
		ElapsedNs: int64(elapsed), Interrupted: in, Accounting: lr.Accounting, LLM: lr,
	}, nil
}

// finish ends the run once its workers have stopped: it closes the mock
// and the client, and returns the provider's counters (the mock's, or
// with -provider-stats those of the provider at url) and the client's
// checks.
func (r *llmRun) finish(mock *mockprovider.Server, url string) (*mockprovider.Stats, []Check) {
	var stats *mockprovider.Stats
	if mock != nil {
		if err := mock.Close(); err != nil {
			noteErr(&r.k.firstErr, fmt.Errorf("mock provider: %w", err))
		}
		s := mock.Stats()
		stats = &s
	}
	// An extension's Finish may wait for the other processes on its
	// pool: the provider's counters, read after it, then cover them all.
	checks := r.client.Finish()
	r.client.Close()
	if r.cfg.LLM.ProviderStats {
		s, err := readProviderStats(r.ctx, url, r.keys)
		if err != nil {
			noteErr(&r.k.firstErr, err)
			checks = append(checks, Check{Name: "the provider's counters were read", Detail: err.Error()})
		}
		stats = s
	}
	return stats, checks
}

// startMock starts the in-process mock provider on loopback, unless the
// run has a -provider: it returns the mock (nil then) and the URL the
// calls go to.
func startMock(cfg Config, keys []string) (*mockprovider.Server, string, error) {
	lc := cfg.LLM
	if lc.Provider != "" {
		return nil, lc.Provider, nil
	}
	p, err := mockprovider.New(mockprovider.Config{
		Keys: keys, RequestsPerMinute: lc.RPM, TokensPerMinute: lc.TPM,
		Latency: lc.Latency, Seed: cfg.Seed,
	})
	if err != nil {
		return nil, "", err
	}
	mock, err := mockprovider.Listen("127.0.0.1:0", p)
	if err != nil {
		return nil, "", err
	}
	return mock, mock.URL, nil
}

// newLLMClient makes the client cfg.Pool names, and its title.
func newLLMClient(ctx context.Context, cfg Config, ext *Extension, keys []string) (LLMClient, string, error) {
	switch {
	case cfg.Pool == "naive":
		return newNaiveClient(len(keys)), clientTitle(cfg.Pool), nil
	case ext != nil && cfg.Pool == ext.Name:
		c, err := ext.LLM(ctx, cfg, keys)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", ext.Name, err)
		}
		return c, ext.Title() + ", " + ext.LLMTitle, nil
	}
	c, err := newCRSClient(ctx, cfg.LLM, cfg.Ejection(), keys, nil)
	return c, clientTitle(cfg.Pool), err
}

// ErrNotProviderStats is what -provider-stats reports when the
// provider's GET /stats is not a mockprovider's counters for the run's
// keys: another server's JSON would otherwise read as a provider that
// served nothing.
var ErrNotProviderStats = errors.New("not a mockprovider's GET /stats for these keys")

// readProviderStats reads a mockprovider's GET /stats, which must count
// every one of keys.
func readProviderStats(ctx context.Context, base string, keys []string) (*mockprovider.Stats, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statsURL(base), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("provider stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("provider stats: GET %s: %s (-provider-stats wants a mockprovider)", statsURL(base), resp.Status)
	}
	var s mockprovider.Stats
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&s); err != nil {
		return nil, fmt.Errorf("provider stats: GET %s: %w: %v", statsURL(base), ErrNotProviderStats, err)
	}
	counted := map[string]bool{}
	for _, k := range s.Keys {
		counted[k.Key] = true
	}
	for _, k := range keys {
		if !counted[k] {
			return nil, fmt.Errorf("provider stats: GET %s: %w (it counts %d keys, none of them %s)",
				statsURL(base), ErrNotProviderStats, len(s.Keys), keyName(k))
		}
	}
	return &s, nil
}

// worker makes calls back to back until the window ends.
func (r *llmRun) worker(id int) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(id)))
	for r.window.Err() == nil {
		r.call(drawCall(r.cfg.LLM, rng))
	}
}

// call makes one call of the workload, retrying after each 429 that
// gives a retry-after, and on another key after an attempt that failed
// for its key (at most LLMConfig.Retries times), until it is served,
// fails, or the window ends while it waits. Its outcome is counted
// exactly once.
func (r *llmRun) call(c LLMCall) {
	k := &r.k
	k.calls.Add(1)
	k.waiting.inc()
	waiting := true
	defer func() {
		if waiting {
			k.waiting.dec()
		}
	}()
	start := time.Now()
	c = r.estimated(c)
	for {
		h, err := r.client.Pick(r.window, c)
		if err != nil {
			if r.window.Err() != nil && errors.Is(err, r.window.Err()) {
				r.unfinished(start)
			} else {
				k.failed.Add(1)
				noteErr(&k.firstErr, err)
			}
			return
		}
		if r.window.Err() != nil {
			r.note(h.Unsent())
			r.unfinished(start)
			return
		}
		k.waiting.dec()
		waiting = false
		next, wait, done := r.attempt(h, c, start)
		if done {
			return
		}
		k.waiting.inc()
		waiting = true
		if !sleepCtx(r.window, wait) {
			r.unfinished(start)
			return
		}
		c = next
	}
}

// attempt sends call c under h and counts its answer. It returns the
// call to try again and how long to wait first, or done when the call
// has its outcome.
func (r *llmRun) attempt(h LLMHold, c LLMCall, start time.Time) (next LLMCall, wait time.Duration, done bool) {
	k := &r.k
	kc := &k.keys[h.Key()]
	kc.attempts.Add(1)
	k.sending.inc()
	t0 := time.Now()
	a := r.http.send(r.ctx, r.keys[h.Key()], c, r.cfg.LLM.AttemptTimeout)
	t1 := time.Now()
	k.sending.dec()
	switch {
	case a.Status == 200:
		r.learnPrompt(c, a)
		r.note(h.Served(a))
		kc.served.Add(1)
		kc.prompt.Add(a.Usage.Prompt)
		kc.completion.Add(a.Usage.Completion)
		kc.tokens.Add(a.Usage.Total)
		k.served.Add(1)
		k.added.Record(t0.Sub(start))
		k.service.Record(t1.Sub(t0))
		k.total.Record(t1.Sub(start))
		return c, 0, true
	case a.Status == 429 && a.RetryAfter > 0:
		kc.rateLimited.Add(1)
		wait, err := h.Refused(a)
		r.note(err)
		return c, wait, false
	case a.Status == 429:
		kc.rateLimited.Add(1)
		r.note(fmt.Errorf("a 429 without a retry-after from %s", r.keyName(h.Key())))
	case a.Err != nil:
		kc.other.Add(1)
		r.note(fmt.Errorf("%s: %w", r.keyName(h.Key()), a.Err))
	default:
		kc.other.Add(1)
		r.note(fmt.Errorf("status %d from %s", a.Status, r.keyName(h.Key())))
	}
	r.note(h.Failed(a))
	// A call whose key failed goes again, avoiding the key, while it has
	// retries left and another key is left to try (a retry after the
	// window ends finds no key: the call is unfinished).
	if a.KeyFault() && r.ctx.Err() == nil && len(c.Avoid) < r.cfg.LLM.Retries && len(c.Avoid)+1 < len(r.keys) {
		k.retried.Add(1)
		c.Avoid = append(slices.Clip(c.Avoid), h.Key())
		return c, 0, false
	}
	k.failed.Add(1)
	return c, 0, true
}

// estimated is c with its estimate by the provider's count of a prompt:
// the client counts a quarter of its bytes, a provider's tokenizer
// otherwise, and an estimate below what the provider admits the call on
// would be refused. Until an answer shows the provider's count, the
// client's is used.
func (r *llmRun) estimated(c LLMCall) LLMCall {
	if bits := r.k.promptRatio.Load(); bits != 0 {
		p := max(int64(math.Ceil(float64(c.Prompt)*math.Float64frombits(bits))), 1)
		c.Estimate = min(p+c.MaxTokens, config.MaxUnits)
	}
	return c
}

// learnPrompt keeps the largest ratio of the provider's prompt tokens to
// the client's seen so far.
func (r *llmRun) learnPrompt(c LLMCall, a LLMAnswer) {
	if c.Prompt <= 0 || a.Usage.Prompt <= 0 {
		return
	}
	ratio := float64(a.Usage.Prompt) / float64(c.Prompt)
	for {
		old := r.k.promptRatio.Load()
		if old != 0 && math.Float64frombits(old) >= ratio {
			return
		}
		if r.k.promptRatio.CompareAndSwap(old, math.Float64bits(ratio)) {
			return
		}
	}
}

// unfinished counts a call that the end of the window left waiting, with
// how long it had waited by then.
func (r *llmRun) unfinished(start time.Time) {
	r.k.unfinished.Add(1)
	end, _ := r.window.Deadline()
	if now := time.Now(); now.Before(end) {
		end = now // interrupted
	}
	r.k.unfinishedWait.Record(end.Sub(start))
}

// sleepCtx waits d, or less if ctx ends first; it reports whether ctx is
// still going.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err() == nil
}

func (r *llmRun) note(err error) {
	if err != nil {
		noteErr(&r.k.firstErr, err)
	}
}

// keyName is key i as the report shows it (see keyName).
func (r *llmRun) keyName(i int) string { return keyName(r.keys[i]) }

// keyName is how the report names a key, never by its whole secret: as
// providers' dashboards do (OpenAI's "sk-...abcd"), its first three and
// last four characters. A key shorter than 20 characters is no real
// provider's secret (theirs are 40 and more), but a name such as the
// mock's sk-mock-1 or a test provider's key-2: it is shown as given, so
// that the report and the provider name a key alike.
func keyName(key string) string {
	if len(key) < 20 {
		return key
	}
	return key[:3] + "..." + key[len(key)-4:]
}

// showProgress prints the live status until the returned func is called.
func (r *llmRun) showProgress(p *Progress, start time.Time) (stop func()) {
	if p == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-done:
				p.finish()
				return
			case <-t.C:
			}
			var limited uint64
			for i := range r.k.keys {
				limited += r.k.keys[i].rateLimited.Load()
			}
			clock := fmt.Sprintf("%6.1fs / %.1fs", time.Since(start).Seconds(), r.cfg.Duration.Seconds())
			if r.window.Err() != nil {
				clock = "stopping: the calls in progress finish"
			}
			p.show(fmt.Sprintf("%s  served %s  429s %s  waiting %s  sending %s", clock,
				group(r.k.served.Load()), group(limited), group(r.k.waiting.load()), group(r.k.sending.load())))
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
