// Command waitload runs the waiting workload of package waitload (many
// goroutines competing for a few exclusive resources) against crs and the
// baseline pools, one after another in the same process, and prints one
// table row per pool.
//
// Usage:
//
//	go run ./cmd/waitload [-workers 10000] [-resources 4] [-hold 1ms]
//	    [-warmup 500ms] [-duration 5s] [-pools crs,crs-lease,channel,semaphore,puddle]
//	    [-json results.json] [-cpuprofile cpu.pprof]
//
// Compare pools only within one run (the CPU ratio column does): the
// machines this runs on are shared and their speed drifts between runs.
// With -cpuprofile, each pool's measured window is profiled into its own
// file, named by inserting the pool's name before the extension
// (cpu.pprof becomes cpu.crs.pprof, ...).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/crsched/crs/bench/waitload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "waitload:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := waitload.DefaultConfig()
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "goroutines competing for the resources")
	flag.IntVar(&cfg.Resources, "resources", cfg.Resources, "exclusive resources in each pool")
	flag.DurationVar(&cfg.Hold, "hold", cfg.Hold, "time.Sleep while holding a resource")
	flag.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before the measured window")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured window per pool")
	flag.IntVar(&cfg.HeapCount, "heaps", cfg.HeapCount, "crs HeapCount")
	pools := flag.String("pools", strings.Join(waitload.Pools(), ","), "pools to run, in order (comma list)")
	jsonPath := flag.String("json", "", "write the results as JSON to this file")
	profile := flag.String("cpuprofile", "", "write a CPU profile of each pool's measured window (name gets the pool inserted)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	fmt.Printf("waitload: %s %s/%s, GOMAXPROCS %d, %d CPUs; %d workers, %d resources, hold %v, warmup %v, window %v\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(),
		cfg.Workers, cfg.Resources, cfg.Hold, cfg.Warmup, cfg.Duration)

	var results []waitload.Result
	for _, name := range strings.Split(*pools, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		r, err := runOne(name, cfg, *profile)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, "  %-10s served %d in %v\n", name, r.Served, r.Window)
		results = append(results, r)
	}
	fmt.Println()
	if err := waitload.WriteTable(os.Stdout, results); err != nil {
		return err
	}
	if *jsonPath != "" {
		if err := writeJSON(*jsonPath, results); err != nil {
			return err
		}
	}
	for _, r := range results {
		if r.Err != "" || r.Violations > 0 {
			return fmt.Errorf("%s failed", r.Pool)
		}
	}
	return nil
}

// runOne runs one pool, profiling it into its own file if asked.
func runOne(name string, cfg waitload.Config, profile string) (waitload.Result, error) {
	if profile == "" {
		return waitload.Run(name, cfg)
	}
	ext := filepath.Ext(profile)
	f, err := os.Create(strings.TrimSuffix(profile, ext) + "." + name + ext)
	if err != nil {
		return waitload.Result{}, err
	}
	cfg.CPUProfile = f
	r, runErr := waitload.Run(name, cfg)
	if err := f.Close(); err != nil && runErr == nil {
		runErr = err
	}
	return r, runErr
}

// writeJSON writes the results with each one's CPU ratio to the baseline.
func writeJSON(path string, results []waitload.Result) error {
	type row struct {
		waitload.Result
		CPURatio float64 `json:"cpu_ratio_to_baseline"`
	}
	out := struct {
		Baseline string `json:"baseline"`
		Results  []row  `json:"results"`
	}{Baseline: waitload.Baseline}
	for _, r := range results {
		out.Results = append(out.Results, row{r, waitload.CPURatio(r, results)})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
