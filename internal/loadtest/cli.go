package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// Main is the crsload command: parse the flags, run (twice with -compare),
// print the report, write the files asked for. It returns the exit
// status: 0, 1 if a run's accounting failed or a file could not be
// written, 2 for a usage error (one line on stderr, pointing to -h). -h
// prints the usage on stdout.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainWith(ctx, args, stdout, stderr)
}

// MainWith is Main with more pools to choose from: each extension adds its
// flags, and runs on its pool when they select it (see Extension).
func MainWith(ctx context.Context, args []string, stdout, stderr io.Writer, exts ...Extension) int {
	o, err := ParseFlags(args, stdout, exts...)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "crsload: %v (see -h)\n", err)
		return 2
	}
	r, err := runOnce(ctx, o.Config, o.ext, o.Progress, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "crsload:", err)
		return 1
	}
	if o.Compare {
		base := o.Config
		base.Pool = "mutex"
		if r.Baseline, err = runOnce(ctx, base, nil, o.Progress, stderr); err != nil {
			fmt.Fprintln(stderr, "crsload:", err)
			return 1
		}
	}

	if err := WriteText(stdout, r); err != nil {
		fmt.Fprintln(stderr, "crsload:", err)
		return 1
	}
	if r.Baseline != nil {
		if err := WriteComparison(stdout, r, r.Baseline); err != nil {
			fmt.Fprintln(stderr, "crsload:", err)
			return 1
		}
	}
	status := 0
	for _, out := range []struct {
		path  string
		write func(io.Writer, *Report) error
	}{{o.JSON, WriteJSON}, {o.HTML, WriteHTML}} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, r, out.write); err != nil {
			fmt.Fprintln(stderr, "crsload:", err)
			status = 1
		} else {
			fmt.Fprintf(stderr, "crsload: wrote %s\n", out.path)
		}
	}
	if !r.Accounting.OK || (r.Baseline != nil && !r.Baseline.Accounting.OK) {
		fmt.Fprintln(stderr, "crsload: accounting failed")
		status = 1
	}
	return status
}

// runOnce runs cfg, with its status (a heading and the progress) on
// status: stderr, so that stdout carries the report alone.
func runOnce(ctx context.Context, cfg Config, ext *Extension, progressMode string, status io.Writer) (*Report, error) {
	progress, err := NewProgress(status, progressMode)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		title := poolTitle(cfg.Pool)
		if ext != nil && cfg.Pool == ext.Name && ext.Title != nil {
			title = ext.Title()
		}
		fmt.Fprintf(status, "crsload: %s scenario on the %s, %s workers, %d resources: %s warm-up + %s\n",
			cfg.Scenario, title, group(cfg.Workers), cfg.Resources, dur(cfg.Warmup), dur(cfg.Duration))
	}
	return runOn(ctx, cfg, ext, progress)
}

func writeFile(path string, r *Report, write func(io.Writer, *Report) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, r); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
