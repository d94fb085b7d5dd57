package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Main is the crsload command: parse the flags, run (twice with -compare),
// print the report, write the files asked for. It returns the exit
// status: 0, 1 if a run's accounting failed or a file could not be
// written, 2 for a usage error (one line on stderr, pointing to -h), 3
// if an extension's pool cannot be reached (ErrUnreachable), and 128 +
// the signal's number when a signal (see NotifyContext) interrupted the
// run, whose report then says so. -h prints the usage on stdout.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainWith(ctx, args, stdout, stderr)
}

// MainWith is Main with more pools to choose from: each extension adds its
// flags, and runs on its pool when they select it (see Extension).
func MainWith(ctx context.Context, args []string, stdout, stderr io.Writer, exts ...Extension) int {
	prog := commandName(exts)
	o, err := ParseFlags(args, stdout, exts...)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see -h)\n", prog, err)
		return 2
	}
	// The report files are opened before the run, so that a path that
	// cannot be written fails now rather than after the whole run.
	outs, err := openOutputs(o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	text := stdout
	for _, out := range outs {
		if out.f == nil {
			text = stderr // stdout carries the JSON or HTML report
		}
	}
	r, err := runAll(ctx, prog, o, stderr)
	if err != nil {
		for _, out := range outs {
			out.abandon()
		}
		return notRun(ctx, prog, err, stderr)
	}
	status := writeReports(prog, r, text, outs, stderr)
	// An interrupted run still reports what it measured, and then exits
	// as a process the signal ended would, so that a script sees it.
	if err := context.Cause(ctx); err != nil {
		what := "interrupted"
		if o.Compare && r.Baseline == nil {
			what += ": the baseline did not run"
		}
		fmt.Fprintf(stderr, "%s: %s (%s)\n", prog, what, interruptCause(err))
		var in Interrupt
		if errors.As(err, &in) {
			return in.status()
		}
		return max(status, 1)
	}
	return status
}

// runAll runs o's run and, with -compare, its baseline. A signal that
// stops the baseline's setup leaves the first run's report, which then
// says that the baseline did not run.
func runAll(ctx context.Context, prog string, o Options, stderr io.Writer) (*Report, error) {
	r, err := runOnce(ctx, prog, o.Config, o.ext, o.Progress, stderr)
	if err != nil || !o.Compare || ctx.Err() != nil {
		return r, err
	}
	base := o.Config
	base.Pool = "mutex"
	if base.Scenario == LLM {
		base.Pool = "naive"
	}
	if r.Baseline, err = runOnce(ctx, prog, base, nil, o.Progress, stderr); err != nil && ctx.Err() == nil {
		return nil, err
	}
	return r, nil
}

// writeReports writes the text report (and the comparison) to text and
// the report files, and returns the exit status so far: 1 if one could
// not be written or an accounting failed.
func writeReports(prog string, r *Report, text io.Writer, outs []*output, stderr io.Writer) int {
	status := 0
	if err := WriteText(text, r); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		status = 1
	}
	if r.Baseline != nil {
		if err := WriteComparison(text, r, r.Baseline); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			status = 1
		}
	}
	for _, out := range outs {
		if err := out.finish(r); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			status = 1
		} else if out.f != nil {
			fmt.Fprintf(stderr, "%s: wrote %s\n", prog, out.path)
		}
	}
	if !r.Accounting.OK || (r.Baseline != nil && !r.Baseline.Accounting.OK) {
		fmt.Fprintf(stderr, "%s: accounting failed\n", prog)
		status = 1
	}
	if r.LLM != nil && r.LLM.MostlyFailed() {
		fmt.Fprintf(stderr, "%s: %s\n", prog, r.LLM.failedLine())
		status = 1
	}
	return status
}

// ErrUnreachable is wrapped by an extension's Open (and LLM) when the
// pool's server cannot be reached: the command then exits 3, which no
// run that started has.
var ErrUnreachable = errors.New("cannot be reached")

// notRun reports a run that could not start, and returns the exit
// status: 128 + the signal's number if a signal stopped its setup, 3 if
// the pool's server cannot be reached (ErrUnreachable), 1 otherwise.
func notRun(ctx context.Context, prog string, err error, stderr io.Writer) int {
	var in Interrupt
	if errors.As(context.Cause(ctx), &in) {
		var cut *setupCut
		if errors.As(err, &cut) {
			fmt.Fprintf(stderr, "%s: interrupted by %s while %v: nothing ran\n", prog, signalName(in.Signal), cut)
		} else {
			fmt.Fprintf(stderr, "%s: interrupted by %s before the run began (%v): nothing ran\n", prog, signalName(in.Signal), err)
		}
		return in.status()
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	if errors.Is(err, ErrUnreachable) {
		return 3
	}
	return 1
}

// runOnce runs cfg, with its status (a heading and the progress) on
// status: stderr, so that stdout carries the report alone.
func runOnce(ctx context.Context, prog string, cfg Config, ext *Extension, progressMode string, status io.Writer) (*Report, error) {
	progress, err := NewProgress(status, progressMode)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		title := poolTitle(cfg.Pool)
		if ext != nil && cfg.Pool == ext.Name && ext.Title != nil {
			title = ext.Title()
		}
		if cfg.Scenario == Tenants {
			return runOn(ctx, cfg, ext, progress) // it says what runs, run by run
		}
		if cfg.Scenario == LLM {
			client := clientTitle(cfg.Pool)
			if ext != nil && cfg.Pool == ext.Name {
				client = title + ", " + ext.LLMTitle
			}
			fmt.Fprintf(status, "%s: llm scenario with the %s, %s workers, %s keys: %s\n",
				prog, client, group(cfg.Workers), group(len(cfg.LLM.keys(cfg.Resources))), dur(cfg.Duration))
			return runOn(ctx, cfg, ext, progress)
		}
		fmt.Fprintf(status, "%s: %s scenario on the %s, %s workers, %s resources: %s warm-up + %s\n",
			prog, cfg.Scenario, title, group(cfg.Workers), group(cfg.Resources), dur(cfg.Warmup), dur(cfg.Duration))
	}
	return runOn(ctx, cfg, ext, progress)
}

// output is a report file (-json, -html), opened before the run.
type output struct {
	path  string
	w     io.Writer
	f     *os.File // nil for stdout ("-")
	fresh bool     // the file did not exist: removed if nothing is written
	write func(io.Writer, *Report) error
}

// openOutputs opens the report files asked for; "-" is stdout.
func openOutputs(o Options, stdout io.Writer) ([]*output, error) {
	var outs []*output
	for _, want := range []struct {
		flag, path string
		write      func(io.Writer, *Report) error
	}{{"json", o.JSON, WriteJSON}, {"html", o.HTML, WriteHTML}} {
		switch want.path {
		case "":
			continue
		case "-":
			outs = append(outs, &output{path: "-", w: stdout, write: want.write})
			continue
		}
		_, statErr := os.Stat(want.path)
		f, err := os.Create(want.path)
		if err != nil {
			for _, out := range outs {
				out.abandon()
			}
			return nil, fmt.Errorf("-%s: %w", want.flag, err)
		}
		outs = append(outs, &output{path: want.path, w: f, f: f, fresh: errors.Is(statErr, fs.ErrNotExist), write: want.write})
	}
	return outs, nil
}

// finish writes the report and closes the file.
func (out *output) finish(r *Report) error {
	err := out.write(out.w, r)
	if out.f != nil {
		err = errors.Join(err, out.f.Close())
	}
	if err != nil {
		return fmt.Errorf("%s: %w", out.path, err)
	}
	return nil
}

// abandon closes a file that will not be written, and removes it if the
// run created it.
func (out *output) abandon() {
	if out.f == nil {
		return
	}
	out.f.Close()
	if out.fresh {
		os.Remove(out.path)
	}
}

// commandName is the name the command's messages and usage go by: that
// of the last extension that gives one (see Extension.Command), or
// crsload.
func commandName(exts []Extension) string {
	name := "crsload"
	for _, x := range exts {
		if x.Command != "" {
			name = x.Command
		}
	}
	return name
}
