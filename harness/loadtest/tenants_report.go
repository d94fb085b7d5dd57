package loadtest

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// TenantsReport is the tenants scenario's report: the same workload with
// tenants and priorities (Fair) and first come, first served (FCFS).
type TenantsReport struct {
	Pool                string   `json:"pool"`
	PoolTitle           string   `json:"pool_title"`
	Resources           int      `json:"resources"` // exclusive keys
	DurationNs          int64    `json:"duration_ns"`
	HoldNs              int64    `json:"hold_ns"`
	Weights             [2]int64 `json:"weights"` // heavy, light
	Workers             [2]int   `json:"workers"` // heavy, light
	Interactive         int      `json:"interactive"`
	InteractivePriority int      `json:"interactive_priority"`
	// Fair is the run with tenants and priorities; FCFS the run without
	// options, nil if a signal ended the first run.
	Fair        TenantsRun    `json:"fair"`
	FCFS        *TenantsRun   `json:"fcfs"`
	Accounting  Accounting    `json:"accounting"`
	Environment Environment   `json:"environment"`
	Interrupted *Interruption `json:"interrupted,omitempty"`
}

// TenantsRun is one run of the tenants scenario.
type TenantsRun struct {
	Mode     string `json:"mode"` // "tenants and priorities" or "first come, first served"
	WindowNs int64  `json:"window_ns"`
	// Held is how long the holds lasted, timer lag included: the yardstick
	// of the interactive wait, which is at least what is left of one.
	Held LatencySummary `json:"held"`
	// Tenants are the heavy and the light tenant: each one's share of
	// the grants to both, against its share of their weights.
	Tenants []TenantShare `json:"tenants"`
	// Jain is Jain's fairness index of the tenants' shares per unit of
	// weight, (sum x)^2 / (n sum x^2): 1 when each tenant's share is its
	// weight's, 1/n when one tenant has everything.
	Jain float64 `json:"jain_index"`
	// Interactive is the interactive callers' (nil without them); their
	// Share is of every grant.
	Interactive *TenantShare `json:"interactive,omitempty"`
	Accounting  Accounting   `json:"accounting"`
}

// TenantShare is what one tenant's callers got.
type TenantShare struct {
	Name        string         `json:"name"`
	Weight      int64          `json:"weight"`
	Workers     int            `json:"workers"`
	Priority    int            `json:"priority"`
	Grants      uint64         `json:"grants"`
	Share       float64        `json:"share"`
	WeightShare float64        `json:"weight_share"` // the share its weight asks for
	Wait        LatencySummary `json:"wait"`         // from the call to the grant
}

func newTenantsReport(cfg Config, ext *Extension) *TenantsReport {
	title := poolTitle(cfg.Pool)
	if ext != nil && cfg.Pool == ext.Name && ext.Title != nil {
		title = ext.Title()
	}
	t := cfg.Tenants
	return &TenantsReport{
		Pool: cfg.Pool, PoolTitle: title, Resources: cfg.Resources, DurationNs: int64(cfg.Duration),
		HoldNs: int64(t.Hold), Weights: t.Weights, Workers: t.Workers, Interactive: t.Interactive,
		InteractivePriority: t.Priority, Environment: environment(),
	}
}

// report sums up a run once its callers have stopped.
func (r *tenantsRun) report(fair bool, window time.Duration, checks []Check) TenantsRun {
	run := TenantsRun{Mode: modeTitle(fair), WindowNs: int64(window), Held: summarise(r.held.Snapshot())}
	var batch, all uint64
	var weights int64
	for i, c := range r.classes {
		all += c.grants.Load()
		if i < 2 {
			batch += c.grants.Load()
			weights += c.weight
		}
	}
	for i, c := range r.classes {
		s := TenantShare{Name: c.name, Weight: c.weight, Workers: c.workers, Priority: c.priority,
			Grants: c.grants.Load(), Wait: summarise(c.wait.Snapshot())}
		if i < 2 {
			s.Share, s.WeightShare = shareOf(s.Grants, batch), float64(c.weight)/float64(weights)
			run.Tenants = append(run.Tenants, s)
			continue
		}
		s.Share = shareOf(s.Grants, all)
		run.Interactive = &s
	}
	run.Jain = jain(run.Tenants)
	add := func(name string, ok bool, detail string) {
		checks = append(checks, Check{Name: name, OK: ok, Detail: detail})
	}
	failed := "none"
	if p := r.firstErr.Load(); p != nil {
		failed = group(r.failures.Load()) + ", the first: " + *p
	}
	add("no lease or release failed", r.failures.Load() == 0, failed)
	if batch > 0 || !r.cut {
		add("the callers were granted keys", batch > 0, group(all)+" grants")
	}
	run.Accounting = accountingOf(checks)
	return run
}

func shareOf(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// jain is Jain's fairness index of the shares per unit of weight share.
func jain(ts []TenantShare) float64 {
	var sum, squares float64
	for _, t := range ts {
		x := t.Share / t.WeightShare
		sum += x
		squares += x * x
	}
	if squares == 0 {
		return 0
	}
	return sum * sum / (float64(len(ts)) * squares)
}

func accountingOf(checks []Check) Accounting {
	a := Accounting{OK: true, Checks: checks}
	for _, c := range checks {
		a.OK = a.OK && c.OK
	}
	return a
}

// accounting is both runs' checks, each named with its run.
func (tr *TenantsReport) accounting() Accounting {
	var checks []Check
	for _, run := range []*TenantsRun{&tr.Fair, tr.FCFS} {
		if run == nil {
			continue
		}
		for _, c := range run.Accounting.Checks {
			c.Name = run.Mode + ": " + c.Name
			checks = append(checks, c)
		}
	}
	return accountingOf(checks)
}

// writeTenantsText writes the two runs side by side.
func writeTenantsText(w io.Writer, r *Report) error {
	tr := r.Tenants
	b := &strings.Builder{}
	fmt.Fprintf(b, "crsload: tenants scenario, %s", tr.PoolTitle)
	if in := r.Interrupted; in != nil {
		fmt.Fprintf(b, " (INTERRUPTED by %s)", in.Cause)
	}
	keys := "keys"
	if tr.Resources == 1 {
		keys = "key"
	}
	fmt.Fprintf(b, "\n  %s exclusive %s, holds of %s, %s a run; heavy: %s callers, light: %s",
		group(tr.Resources), keys, dur(tr.HoldNs), dur(tr.DurationNs), group(tr.Workers[0]), group(tr.Workers[1]))
	if tr.Interactive > 0 {
		fmt.Fprintf(b, ", interactive: %s at priority %d", group(tr.Interactive), tr.InteractivePriority)
	}
	env := r.Environment
	fmt.Fprintf(b, "\n  %s/%s, %d CPUs, GOMAXPROCS %d, %s\n\n", env.GOOS, env.GOARCH, env.CPUs, env.GOMAXPROCS, env.Go)
	runs := []*TenantsRun{&tr.Fair}
	if tr.FCFS != nil {
		runs = append(runs, tr.FCFS)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "  \t")
	for _, run := range runs {
		fmt.Fprintf(tw, "%s\t", run.Mode)
	}
	fmt.Fprintln(tw)
	row := func(name string, f func(*TenantsRun) string) {
		fmt.Fprintf(tw, "  %s\t", name)
		for _, run := range runs {
			fmt.Fprintf(tw, "%s\t", f(run))
		}
		fmt.Fprintln(tw)
	}
	for i, name := range []string{HeavyTenant, LightTenant} {
		row(fmt.Sprintf("%s share (weight %d: %s)", name, tr.Weights[i], pct(tr.Fair.Tenants[i].WeightShare)),
			func(run *TenantsRun) string { return pct(run.Tenants[i].Share) })
	}
	row("Jain's fairness index", func(run *TenantsRun) string { return fmt.Sprintf("%.3f", run.Jain) })
	row("batch grants", func(run *TenantsRun) string { return group(run.Tenants[0].Grants + run.Tenants[1].Grants) })
	if tr.Interactive > 0 {
		row("interactive grants", func(run *TenantsRun) string { return group(run.Interactive.Grants) })
		row("interactive wait p50", func(run *TenantsRun) string { return dur(run.Interactive.Wait.P50) })
		row("interactive wait p99", func(run *TenantsRun) string { return dur(run.Interactive.Wait.P99) })
	}
	row("hold as it ran, p50", func(run *TenantsRun) string { return dur(run.Held.P50) })
	if err := tw.Flush(); err != nil {
		return err
	}
	writeAccounting(b, r.Accounting)
	_, err := io.WriteString(w, b.String())
	return err
}
