package loadtest

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/harness/mockprovider"
)

// Options are the command's settings: the run's Config and what to do
// with its report.
type Options struct {
	Config   Config
	Compare  bool
	JSON     string
	HTML     string
	Progress string
	// Force runs a run that would need more memory than is available.
	Force bool
	// ext is the Extension whose flags selected its pool, if any.
	ext *Extension
}

// ParseFlags reads the command line. Settings a scenario changes (see
// ScenarioDefaults) take the scenario's value unless given explicitly.
// It returns flag.ErrHelp for -h, after printing the usage to w; any
// other error is one line, for the caller to print. The
// flags of exts are read too, and the first extension they select gets
// to adjust the settings (see Extension.Configure).
func ParseFlags(args []string, w io.Writer, exts ...Extension) (Options, error) {
	o := Options{Config: Default(), Progress: "auto"}
	c := &o.Config
	fs := flag.NewFlagSet(commandName(exts), flag.ContinueOnError)
	// The flag package prints the whole usage after every parse error;
	// the caller prints the error alone, in one line, and -h the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}

	keys := ""
	registerFlags(fs, &o, &keys)
	for _, x := range exts {
		x.Flags(fs)
	}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(w)
			printUsage(fs, w, exts)
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := parseTenants(&o, set); err != nil {
		return o, err
	}
	if err := parseLLM(&o, keys, set); err != nil {
		return o, err
	}
	if err := applyScenario(fs, c, set); err != nil {
		return o, err
	}
	if o.Compare && set["pool"] {
		return o, errors.New("pool: -compare runs both pools itself (crs, then the mutex baseline; llm: crs, then naive): drop -pool")
	}
	if o.Compare {
		c.Pool = "crs" // then the baseline; an extension's pool replaces crs
	}
	if err := o.checkOutputs(); err != nil {
		return o, err
	}
	if err := o.configure(exts, set); err != nil {
		return o, err
	}
	// After the extension's changes: the failure scenario's ejection,
	// say, applies to a pool of leases whatever -api says.
	if err := refuseIdle(o, set); err != nil {
		return o, err
	}
	if err := c.validate(o.ext); err != nil || o.Force {
		return o, err
	}
	avail, where := availableMemory()
	return o, checkMemory(*c, avail, where)
}

// applyScenario gives the flags the user did not set the scenario's
// values (see ScenarioDefaults).
func applyScenario(fs *flag.FlagSet, c *Config, set map[string]bool) error {
	for name, value := range ScenarioDefaults(c.Scenario) {
		if !set[name] {
			if err := fs.Set(name, value); err != nil {
				return err
			}
		}
	}
	// The failure scenario's ejection applies where failures reach the
	// scheduler: Lease.Fail, with -api lease (an extension's pool of
	// leases restores it: see Extension.Configure).
	if !set["eject"] && c.API != "lease" && c.Scenario != LLM {
		c.Eject = 0
	}
	return nil
}

// checkOutputs checks -progress, and that -json and -html go to two
// places.
func (o *Options) checkOutputs() error {
	if _, err := NewProgress(io.Discard, o.Progress); err != nil {
		return err
	}
	switch {
	case o.JSON == "-" && o.HTML == "-":
		return errors.New("json, html: only one report can go to stdout (-)")
	case o.JSON != "" && o.JSON != "-" && filepath.Clean(o.JSON) == filepath.Clean(o.HTML):
		return errors.New("json, html: want two different files")
	}
	return nil
}

// configure lets the first extension whose flags select its pool adjust
// the settings.
func (o *Options) configure(exts []Extension, set map[string]bool) error {
	for i := range exts {
		selected, err := exts[i].Configure(&o.Config, func(name string) bool { return set[name] })
		if err != nil {
			return err
		}
		if selected {
			o.ext = &exts[i]
			o.Config.Pool = exts[i].Name
			return nil
		}
	}
	return nil
}

// registerFlags adds the harness's own flags to fs, reading into o and,
// for -keys, keys.
func registerFlags(fs *flag.FlagSet, o *Options, keys *string) {
	c := &o.Config
	fs.StringVar(&c.Scenario, "scenario", c.Scenario, "the workload: "+strings.Join(Scenarios, ", ")+", "+LLM+", "+Tenants+" (see above)")
	fs.IntVar(&c.Workers, "workers", c.Workers, "concurrent workers, each doing requests back to back; a burst's peak\n(burst: 5000; failure: 1000; cooldown: 8)")
	fs.IntVar(&c.Resources, "resources", c.Resources, "resources (simulated backends) in the pool")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "measured window; throughput is counted over it only")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "run before the window, not counted, so that all workers starting at once does not bias it")
	fs.Var((*policyFlag)(&c.Policy), "policy", "acquire `policy`: shared (a resource takes any number of holders) or exclusive\n(cooldown: exclusive)")
	fs.StringVar(&c.Strategy, "strategy", c.Strategy, "acquire strategy: "+strings.Join(strategyNames, ", ")+" (weighted: equal weights)")
	fs.Var((*orderingFlag)(&c.Ordering), "ordering", "resource `order`: shard (the best of the shard the strategy picks) or global (the best of all)")
	fs.StringVar(&c.API, "api", c.API, "how to acquire: acquire (AcquireContext, then Release(id) under exclusive;\na shared acquisition holds nothing) or lease (Lease, then Lease.Release, or Lease.Fail\nafter a failed backend call)")
	fs.IntVar(&c.Heaps, "heaps", c.Heaps, "scheduler shards (HeapCount); 0: one per resource")
	fs.IntVar(&c.Capacity, "capacity", c.Capacity, "holders per resource at once, exclusive policy")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "per-request acquire timeout (context.WithTimeout)")
	fs.Var((*latencyFlag)(&c.Latency), "latency", "backend latency `distribution`: uniform:MIN-MAX, fixed:D or exp:MEAN")
	fs.Var((*shareFlag)(&c.FailureRate), "failure-rate", "`share` of backend calls that fail (on healthy resources, see -unhealthy), 0 to 1\n(failure: 0.1)")
	fs.IntVar(&c.Unhealthy, "unhealthy", c.Unhealthy, "the first N resources are unhealthy: their calls fail at -unhealthy-rate instead (failure: 1)")
	fs.Var((*shareFlag)(&c.UnhealthyRate), "unhealthy-rate", "`share` of an unhealthy resource's calls that fail, 0 to 1")
	fs.Var((*shareFlag)(&c.CancelRate), "cancel-rate", "`share` of requests the client abandons at a random moment, 0 to 1")
	fs.DurationVar(&c.Cooldown, "cooldown", c.Cooldown, "rest each resource this long whenever a hold on it ends (Config.ReleaseCooldown;\nnot with -policy shared -api acquire, which holds nothing) (cooldown: 100ms)")
	fs.DurationVar(&c.Suspend, "suspend", c.Suspend, "rest a resource this long after a failed backend call (Scheduler.Suspend, then\nthe release); 0: off")
	fs.IntVar(&c.Eject, "eject", c.Eject, "eject a resource after this many failures in a row (Config.Ejection, fed by\nLease.Fail: -api lease only); 0: off (failure: 5, with -api lease; llm: 3, a key\nfailing with no answer, a 5xx, a 401 or 403)")
	fs.DurationVar(&c.EjectBase, "eject-base", c.EjectBase, "with -eject: the first ejection's length; the n-th lasts n times this (llm: 2s)")
	fs.DurationVar(&c.EjectMax, "eject-max", c.EjectMax, "with -eject: the longest ejection; 0: no cap")
	fs.Var((*shareFlag)(&c.EjectShare), "eject-share", "with -eject: the largest `share` of resources ejected at once, 0 to 1 (0: no cap;\none may always be, and never the last resource not ejected)")
	fs.BoolVar(&c.Events, "events", c.Events, "count the scheduler's events with an observer and check them against the harness's counts")
	fs.IntVar(&c.EventQueueSize, "event-queue", c.EventQueueSize, "scheduler event queue size; a full queue drops events and skips the events check")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed; each worker draws from its own generator seeded with it")
	fs.StringVar(&c.Pool, "pool", c.Pool, "pool under test: crs, or mutex (the -compare baseline alone); llm: crs, or naive")
	fs.StringVar(&c.LLM.Provider, "provider", "", "llm: base `URL` of an OpenAI-compatible provider, with or without its /v1 (as OpenAI\nclients take it: https://api.openai.com/v1); calls go to .../v1/chat/completions.\nWith -keys; default: the mock provider, started in-process on 127.0.0.1")
	fs.StringVar(keys, "keys", "", "llm: the API `keys`, k1,k2,... or @FILE (one a line); default: sk-mock-1 ... up to\n-resources, for the mock")
	fs.Int64Var(&c.LLM.RPM, "rpm", c.LLM.RPM, "llm: requests per minute per key, the client's limit and the mock's (0: none)")
	fs.Int64Var(&c.LLM.TPM, "tpm", c.LLM.TPM, "llm: tokens per minute per key, the client's limit and the mock's (0: none)")
	fs.Var((*tokensFlag)(&c.LLM.Prompt), "prompt-tokens", "llm: prompt tokens per call, `uniform:MIN-MAX` or fixed:N")
	fs.Var((*tokensFlag)(&c.LLM.MaxTokens), "max-tokens", "llm: max_tokens per call, `uniform:MIN-MAX` or fixed:N (the mock's completion is\nuniform from 1 to it)")
	fs.Var((*mockLatencyFlag)(&c.LLM.Latency), "provider-latency", "llm: the mock's time per call, `uniform:MIN-MAX` or fixed:D")
	fs.StringVar(&c.LLM.Model, "model", c.LLM.Model, "llm: the model named in each request")
	fs.IntVar(&c.LLM.Retries, "retries", c.LLM.Retries, "llm: a call whose key failed (no answer, a 5xx, a 401 or 403) is tried again on up\nto this many other keys; 0: never")
	fs.DurationVar(&c.LLM.AttemptTimeout, "attempt-timeout", c.LLM.AttemptTimeout, "llm: an attempt with no answer after this long has failed for its key (0: no bound)")
	fs.BoolVar(&c.LLM.ProviderStats, "provider-stats", false, "llm, with -provider: the provider is a mockprovider (cmd/mockprovider): read its\nGET /stats when the run ends, for the provider's own view of every client's calls")
	registerTenantsFlags(fs, &c.Tenants)
	fs.BoolVar(&o.Compare, "compare", false, "run the workload again on a mutex-around-a-heap pool and print both side by side\n(llm: with the naive client, on a fresh mock)")
	fs.StringVar(&o.JSON, "json", "", "write the full report as JSON to `file`; -: to stdout, the text report then going\nto stderr")
	fs.StringVar(&o.HTML, "html", "", "write a self-contained HTML report with charts to `file`; -: to stdout, as -json")
	fs.BoolVar(&o.Force, "force", false, "run even if -workers and -resources would need more memory than this machine has\navailable (see above)")
	fs.StringVar(&o.Progress, "progress", o.Progress, "live status, on stderr: auto (a status line if stderr is a terminal, plain lines\notherwise), line, plain, off")
}

// harnessFlags calls f for each of the harness's own flags (not an
// extension's).
func harnessFlags(f func(*flag.Flag)) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	o := Options{Config: Default()}
	var keys string
	registerFlags(fs, &o, &keys)
	fs.VisitAll(f)
}

// llmReads are the harness's flags, other than llmFlags, that the llm
// scenario reads; it refuses the others.
var llmReads = []string{"scenario", "workers", "resources", "duration", "seed", "pool", "compare", "json", "progress", "force",
	"eject", "eject-base", "eject-max", "eject-share"}

// llmFlags are the flags that only the llm scenario reads.
var llmFlags = []string{"provider", "keys", "rpm", "tpm", "prompt-tokens", "max-tokens", "provider-latency", "model", "provider-stats",
	"retries", "attempt-timeout"}

// parseLLM reads the llm scenario's -keys, and rejects the llm flags
// elsewhere and the flags the scenario cannot honour.
func parseLLM(o *Options, keys string, set map[string]bool) error {
	c := &o.Config
	if c.Scenario != LLM {
		for _, name := range llmFlags {
			if set[name] {
				return fmt.Errorf("%s: only with -scenario llm", name)
			}
		}
		if c.Pool == "naive" {
			return errors.New("pool naive: only with -scenario llm")
		}
		return nil
	}
	reads := map[string]bool{"html": true} // refused below, with a reason of its own
	for _, name := range append(llmReads, llmFlags...) {
		reads[name] = true
	}
	var refused error
	harnessFlags(func(f *flag.Flag) {
		if refused == nil && set[f.Name] && !reads[f.Name] {
			refused = fmt.Errorf("%s: not read by -scenario llm (it reads -%s and the llm: flags)", f.Name, strings.Join(llmReads[1:], ", -"))
		}
	})
	if refused != nil {
		return refused
	}
	switch {
	case o.HTML != "":
		return errors.New("html: the llm scenario has a text and a JSON report only")
	case set["provider-latency"] && c.LLM.Provider != "":
		return errors.New("provider-latency: the in-process mock's; with -provider, set the provider's own (mockprovider -latency)")
	case c.LLM.ProviderStats && c.LLM.Provider == "":
		return errors.New("provider-stats: needs -provider (the in-process mock's counters are always read)")
	case o.Compare && c.LLM.Provider != "":
		return errors.New("compare: needs a fresh provider for each client: run -pool crs and -pool naive one after the other instead")
	}
	if set["keys"] && strings.TrimSpace(keys) == "" {
		return errors.New("keys: empty: give the provider's keys, k1,k2,... or @FILE")
	}
	k, err := readKeys(keys)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	c.LLM.Keys = k
	if len(k) > 0 {
		if set["resources"] && c.Resources != len(k) {
			return fmt.Errorf("resources: %d, but -keys gives %d keys", c.Resources, len(k))
		}
		c.Resources = len(k)
	}
	return nil
}

// refuseIdle refuses a flag given where it does nothing, once the
// scenario's settings and the extension's are applied: a one-line error
// says why, where the run would silently ignore what was asked.
func refuseIdle(o Options, set map[string]bool) error {
	c := o.Config
	first := func(names ...string) string {
		for _, name := range names {
			if set[name] {
				return name
			}
		}
		return ""
	}
	if c.Scenario == Tenants {
		return nil // parseTenants refuses the flags the scenario does not read
	}
	if c.Scenario == LLM {
		// parseLLM refuses the flags the scenario does not read.
		if tuning := first("eject-base", "eject-max", "eject-share"); tuning != "" && c.Eject == 0 {
			return fmt.Errorf("%s: with -eject only, and ejection is off (-eject 0)", tuning)
		}
		return nil
	}
	scheduler := first("strategy", "heaps", "ordering", "events", "event-queue")
	tuning := first("eject-base", "eject-max", "eject-share")
	rest := "" // -suspend or -eject on, given by the user
	if set["suspend"] && c.Suspend > 0 {
		rest = "suspend"
	} else if set["eject"] && c.Eject > 0 {
		rest = "eject"
	}
	fails := c.FailureRate > 0 || (c.Unhealthy > 0 && c.UnhealthyRate > 0)
	switch {
	case c.Pool == "mutex" && scheduler != "":
		return fmt.Errorf("%s: the scheduler's; the mutex baseline has no shards, strategy, ordering or events", scheduler)
	case set["capacity"] && c.Policy == config.Shared:
		return errors.New("capacity: holders per resource under -policy exclusive; a shared resource takes any number")
	case tuning != "" && c.Eject == 0:
		return fmt.Errorf("%s: with -eject only, and ejection is off (the failure scenario's needs -api lease)", tuning)
	case set["unhealthy-rate"] && c.Unhealthy == 0:
		return errors.New("unhealthy-rate: the failure rate of the -unhealthy resources, and there are none")
	case set["event-queue"] && !c.Events:
		return errors.New("event-queue: the queue of the -events observer, which is off")
	case rest != "" && !fails:
		return fmt.Errorf("%s: no backend call fails (-failure-rate 0, and no -unhealthy resource failing)", rest)
	}
	return nil
}

// whole writes a share as a whole percentage: 20%.
func whole(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

func printUsage(fs *flag.FlagSet, w io.Writer, exts []Extension) {
	// The failure scenario's figures come from its settings, so that the
	// help cannot drift from them.
	fc, err := ParseFlags([]string{"-scenario", Failure}, io.Discard)
	if err != nil {
		panic("the failure scenario does not parse: " + err.Error())
	}
	f := fc.Config
	fmt.Fprint(w, fs.Name()+`: load test of the crs scheduler.

N workers compete for R resources through the scheduler. Each request
acquires a resource (waiting at most -timeout), makes a simulated backend
call (latency drawn from -latency; it fails at -failure-rate) and
releases it. The report gives throughput against the theoretical limit,
acquire/backend/total latency percentiles, per-resource use, and an
accounting check. The report goes to stdout, progress to stderr. The
exit status is 1 if the accounting fails, 2 for a bad flag (or one given
where it would do nothing, such as -pool with -compare), and 130
(SIGINT) or 143 (SIGTERM) when a signal cut the run short, whose report
then says so; a signal while the run is set up (workers started,
resources added) stops that too.

With no flags: 10,000 workers, 4 resources, shared policy, adaptive
strategy, normal scenario, a 10 s window after a 1 s warm-up.

`+scenariosUsage(f)+`

A run that would need more memory than this machine has available is
refused, unless -force: about `+bytesText(workerBytes)+` a worker and `+bytesText(resourceBytes)+` a resource (llm:
`+bytesText(llmWorkerBytes)+` a worker and `+bytesText(llmKeyBytes)+` a key), as measured.

The end of a run brings every resting resource back (Include) and checks
the scheduler's Stats: no holder or waiter, every resource active, and its
Failures, Suspensions and Ejections against the calls the harness made.

`)
	for _, x := range exts {
		if x.Usage != "" {
			fmt.Fprintln(w, x.Usage)
		}
	}
	fmt.Fprintf(w, "Usage: %s [flags]\n\n", fs.Name())
	fs.PrintDefaults()
}

// scenariosUsage is the -h paragraph on the scenarios; f is the failure
// scenario's settings.
func scenariosUsage(f Config) string {
	return `Scenarios:
  normal    steady load
  burst     a tenth of the workers, a step to all of them for the middle
            third of the window, and back
  failure   ` + fmt.Sprintf(`backend calls fail: %s on the healthy resources, %s on one
            unhealthy resource (backend-01), so %s of all calls with
            the default %d resources while none is ejected`, whole(f.FailureRate), whole(f.UnhealthyRate),
		whole(f.FailureShare()), f.Resources) + `;
            with -api lease each failure is reported with Lease.Fail,
            and 5 in a row eject the resource (1 s, then 2 s, ... at most
            10 s; at most half the resources at once); -suspend D also
            suspends a resource for D after each failure
  cooldown  8 workers on exclusive resources, each resting -cooldown after
            every release (the scheduler's ReleaseCooldown): the resting
            resources are the bottleneck, with a short queue
  llm       50 workers make chat-completion calls over HTTP for 20 s,
            through a client that picks one of 4 API keys per call, to a
            mock provider started on 127.0.0.1 (or -provider URL with
            -keys) that enforces -rpm and -tpm per key and answers 429
            beyond them. A call's prompt (-prompt-tokens) and max_tokens
            (-max-tokens) are drawn uniformly; the mock admits it on their
            sum and charges its usage. -pool crs leases a key from the
            scheduler with Limits set to -rpm and -tpm, on that sum
            (WithCost), settles the lease to the usage, feeds the
            x-ratelimit-remaining-* headers back (Observe) and rests a
            key for a 429's retry-after; -pool naive goes round robin and
            waits out a 429's retry-after before the next key; -compare
            runs both, each on a fresh mock. The report gives 429s,
            calls served, each budget's share used (tokens spent / what
            the buckets allowed over the window) and the latency added
            before the served attempt. It reads -workers, -resources
            (keys), -duration, -seed, -pool, -compare, -json, -progress,
            -force and the flags marked "llm:", no others; no -html.
  tenants   a heavy tenant (12 goroutines) and a light one (2) lease one
            exclusive key (-resources) back to back, holding it -hold;
            one interactive caller at -interactive-priority leases it
            now and then. It runs for -duration (5 s) with tenants and
            priorities (WithTenant, WithPriority, -tenant-weights as
            Config.Tenants), then as long first come, first served, and
            reports each tenant's share of the grants against its
            weight's, Jain's fairness index and the interactive wait
            p50/p99. It reads -resources, -duration, -pool, -json,
            -progress, -force and the flags marked "tenants:".`
}

// policyFlag reads "shared" or "exclusive".
type policyFlag config.AcquirePolicy

func (p *policyFlag) String() string { return config.AcquirePolicy(*p).String() }

func (p *policyFlag) Set(s string) error {
	switch s {
	case "shared":
		*p = policyFlag(config.Shared)
	case "exclusive":
		*p = policyFlag(config.Exclusive)
	default:
		return fmt.Errorf("want shared or exclusive")
	}
	return nil
}

// latencyFlag reads a Latency.
type latencyFlag Latency

func (l *latencyFlag) String() string { return Latency(*l).String() }

func (l *latencyFlag) Set(s string) error {
	v, err := ParseLatency(s)
	if err == nil {
		*l = latencyFlag(v)
	}
	return err
}

// orderingFlag reads "shard" or "global".
type orderingFlag config.Ordering

func (o *orderingFlag) String() string { return config.Ordering(*o).String() }

func (o *orderingFlag) Set(s string) error {
	switch s {
	case "shard":
		*o = orderingFlag(config.ShardOrder)
	case "global":
		*o = orderingFlag(config.GlobalOrder)
	default:
		return fmt.Errorf("want shard or global")
	}
	return nil
}

// tokensFlag reads a Tokens.
type tokensFlag Tokens

func (t *tokensFlag) String() string { return Tokens(*t).String() }

func (t *tokensFlag) Set(s string) error {
	v, err := ParseTokens(s)
	if err == nil {
		*t = tokensFlag(v)
	}
	return err
}

// mockLatencyFlag reads the mock provider's latency.
type mockLatencyFlag mockprovider.Latency

func (l *mockLatencyFlag) String() string { return mockprovider.Latency(*l).String() }

func (l *mockLatencyFlag) Set(s string) error {
	v, err := mockprovider.ParseLatency(s)
	if err == nil {
		*l = mockLatencyFlag(v)
	}
	return err
}

// shareFlag reads a share from 0 to 1. strconv accepts "NaN" and "Inf",
// and NaN fails every comparison, so a range check written as two
// rejections would let it through: the check is written as one
// acceptance.
type shareFlag float64

func (f *shareFlag) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }

func (f *shareFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !isShare(v) {
		return errors.New("want a number from 0 to 1")
	}
	*f = shareFlag(v)
	return nil
}

// isShare reports whether v is a number from 0 to 1 (NaN is not).
func isShare(v float64) bool { return v >= 0 && v <= 1 }
