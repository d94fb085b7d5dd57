package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// quickArgs are the flags of quick(Normal), for tests of the command.
var quickArgs = []string{"-workers", "30", "-resources", "3", "-duration", "200ms", "-warmup", "20ms",
	"-latency", "uniform:1ms-3ms", "-timeout", "50ms", "-progress", "off"}

func TestMainWritesWellFormedJSONAndSelfContainedHTML(t *testing.T) {
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	var stdout, stderr bytes.Buffer
	args := append([]string{"-compare", "-json", jsonPath, "-html", htmlPath}, quickArgs...)
	if code := Main(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"Accounting: OK", "Throughput", "theoretical limit", "Side by side"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "wrote "+jsonPath) {
		t.Errorf("no note of the file written on stderr:\n%s", stderr.String())
	}

	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("JSON does not parse back: %v", err)
	}
	if r.Pool != "crs" || r.Baseline == nil || r.Baseline.Pool != "mutex" {
		t.Fatalf("pools %q and %v, want crs with a mutex baseline", r.Pool, r.Baseline)
	}
	if !r.Accounting.OK || len(r.Accounting.Checks) == 0 || r.Requests.Attempts == 0 ||
		len(r.Resources) != 3 || len(r.Timeline) < 2 || r.Latency.Acquire.Count == 0 {
		t.Fatalf("JSON report incomplete: %+v", r)
	}

	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{"<!DOCTYPE html>", `id="chart-throughput"`, `id="chart-latency"`, `id="chart-utilisation"`, "<polyline", "<rect", "mutex-around-a-heap"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
	for _, banned := range []string{"http://", "https://", "<script", "src=", "<link", "@import", "url("} {
		if strings.Contains(html, banned) {
			t.Errorf("HTML is not self-contained: it has %q", banned)
		}
	}
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if _, err := ParseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, name := range []string{"workers", "resources", "duration", "warmup", "scenario", "policy", "strategy", "heaps",
		"capacity", "timeout", "api", "ordering", "latency", "failure-rate", "cancel-rate", "cooldown", "suspend", "eject", "eject-base", "eject-max", "eject-share", "events", "event-queue",
		"seed", "pool", "compare", "json", "html", "progress"} {
		if !strings.Contains(out.String(), "\n  -"+name+" ") && !strings.Contains(out.String(), "\n  -"+name+"\n") {
			t.Errorf("-h does not document -%s", name)
		}
	}
	if code := Main(context.Background(), []string{"-h"}, &out, &out); code != 0 {
		t.Fatalf("-h exits %d", code)
	}
}

func TestScenarioDefaultsYieldToExplicitFlags(t *testing.T) {
	o, err := ParseFlags([]string{"-scenario", "cooldown"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Config; c.Workers != 8 || c.Policy.String() != "exclusive" || c.Cooldown == 0 {
		t.Fatalf("cooldown defaults not applied: %+v", c)
	}
	o, err = ParseFlags([]string{"-scenario", "failure", "-workers", "7", "-failure-rate", "0.5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Config; c.Workers != 7 || c.FailureRate != 0.5 {
		t.Fatalf("explicit flags overridden: workers %d, failure rate %v", c.Workers, c.FailureRate)
	}
	o, err = ParseFlags([]string{"-scenario", "failure", "-api", "lease"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Config; c.Eject != 5 || c.EjectBase != time.Second || c.EjectMax != 10*time.Second || c.EjectShare != 0.5 {
		t.Fatalf("failure scenario under leases: eject %d, base %v, max %v, share %v", c.Eject, c.EjectBase, c.EjectMax, c.EjectShare)
	}
	o, err = ParseFlags([]string{"-scenario", "failure"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Config.Eject != 0 {
		t.Fatalf("ejection on without leases, where no failure reaches it: %d", o.Config.Eject)
	}
	o, err = ParseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Config; c.Workers != 10000 || c.Resources != 4 || c.Policy.String() != "shared" || c.Strategy != "adaptive" || c.Scenario != Normal {
		t.Fatalf("the default run is %+v", c)
	}
}

func TestUsageErrorsAreOneLinePointingToHelpAndExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"-scenario", "chaos"}, {"-workers", "0"}, {"-workers", "abc"}, {"-bogus"}, {"-workers"},
		{"-policy", "greedy"}, {"-latency", "soon"}, {"extra"}, {"-progress", "loud"}, {"-cancel-rate", "NaN"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, &stdout, &stderr)
		msg := stderr.String()
		if code != 2 || stdout.Len() > 0 || strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, " (see -h)\n") ||
			!strings.HasPrefix(msg, "crsload: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line ending (see -h)", args, code, stdout.String(), msg)
		}
	}
}

// A flag given where it does nothing is refused with a one-line usage
// error naming it, rather than silently ignored; the same flags are
// accepted where they do something.
func TestFlagsThatWouldDoNothingAreRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"-compare", "-pool", "mutex"}, "pool"},
		{[]string{"-compare", "-pool", "crs"}, "pool"},
		{[]string{"-scenario", "llm", "-compare", "-pool", "naive"}, "pool"},
		{[]string{"-pool", "mutex", "-strategy", "local"}, "strategy"},
		{[]string{"-pool", "mutex", "-heaps", "2"}, "heaps"},
		{[]string{"-pool", "mutex", "-ordering", "global"}, "ordering"},
		{[]string{"-pool", "mutex", "-events=false"}, "events"},
		{[]string{"-capacity", "2"}, "capacity"},
		{[]string{"-eject-base", "2s"}, "eject-base"},
		{[]string{"-scenario", "failure", "-eject-max", "1m"}, "eject-max"}, // -api acquire: no ejection
		{[]string{"-api", "lease", "-eject", "0", "-eject-share", "0.2"}, "eject-share"},
		{[]string{"-unhealthy-rate", "0.9"}, "unhealthy-rate"},
		{[]string{"-events=false", "-event-queue", "10"}, "event-queue"},
		{[]string{"-failure-rate", "0", "-suspend", "1s"}, "suspend"},
		{[]string{"-api", "lease", "-failure-rate", "0", "-eject", "3"}, "eject"},
	} {
		_, err := ParseFlags(tc.args, io.Discard)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), tc.flag+": ") {
			t.Errorf("%v: %v; want one line about -%s", tc.args, err, tc.flag)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), append([]string{"-compare", "-pool", "mutex"}, quickArgs...), &stdout, &stderr); code != 2 ||
		!strings.HasPrefix(stderr.String(), "crsload: pool: -compare runs both pools itself") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("-compare -pool mutex: exit %d, stderr %q", code, stderr.String())
	}
	for _, args := range [][]string{
		{"-compare"},
		{"-pool", "mutex", "-policy", "exclusive", "-capacity", "2"},
		{"-scenario", "cooldown", "-capacity", "2"},
		{"-scenario", "failure", "-api", "lease", "-eject-max", "1m"},
		{"-scenario", "failure", "-unhealthy-rate", "0.9"},
		{"-unhealthy", "1", "-unhealthy-rate", "0.9", "-failure-rate", "0", "-suspend", "1s"},
		{"-event-queue", "10"},
	} {
		if _, err := ParseFlags(args, io.Discard); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestHelpGoesToStdoutAndExitsZero(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), []string{arg}, &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit %d", arg, code)
		}
		if !strings.Contains(stdout.String(), "Usage:") || !strings.Contains(stdout.String(), "  -workers") || stderr.Len() > 0 {
			t.Errorf("%s: stdout %d bytes, stderr %q; want the usage on stdout alone", arg, stdout.Len(), stderr.String())
		}
	}
}

func TestShareFlagsRefuseNaNInfinityAndOutOfRange(t *testing.T) {
	for _, name := range []string{"failure-rate", "unhealthy-rate", "cancel-rate", "eject-share"} {
		for _, v := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "-0.1", "1.5", "x"} {
			_, err := ParseFlags([]string{"-" + name, v}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), "-"+name) || strings.Contains(err.Error(), "\n") {
				t.Errorf("-%s %s: error %v, want one line naming the flag", name, v, err)
			}
		}
		// The failure scenario under leases reads every one of them.
		if _, err := ParseFlags([]string{"-scenario", "failure", "-api", "lease", "-" + name, "0.25"}, &bytes.Buffer{}); err != nil {
			t.Errorf("-%s 0.25: %v", name, err)
		}
	}
}

func TestValidateRefusesANaNShare(t *testing.T) {
	nan := math.NaN()
	for name, set := range map[string]func(*Config){
		"failure-rate":   func(c *Config) { c.FailureRate = nan },
		"unhealthy-rate": func(c *Config) { c.UnhealthyRate = nan },
		"cancel-rate":    func(c *Config) { c.CancelRate = nan },
		"eject-share":    func(c *Config) { c.EjectShare = nan },
	} {
		c := Default()
		set(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), name) {
			t.Errorf("%s NaN: %v", name, err)
		}
	}
}

func TestValidateRefusesAWarmupAndDurationPastTheClock(t *testing.T) {
	c := Default()
	c.Duration = time.Duration(math.MaxInt64 - 10)
	c.Warmup = time.Second
	if err := c.Validate(); err == nil {
		t.Fatal("a window ending past the largest time.Duration accepted")
	}
}

func TestStatusLinesGoToStderrAndTheReportToStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := append(append([]string{}, quickArgs...), "-progress", "plain", "-duration", "1100ms")
	if code := Main(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "crsload: normal scenario, crs scheduler\n") || strings.Contains(stdout.String(), "in-flight") {
		t.Errorf("stdout is not the report alone:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "crsload: normal scenario on the crs scheduler") || !strings.Contains(stderr.String(), "in-flight") {
		t.Errorf("stderr lacks the status lines:\n%s", stderr.String())
	}
}

func TestAnOutputPathThatCannotBeWrittenFailsBeforeTheRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "r.json")
	for _, flagName := range []string{"-json", "-html"} {
		var stdout, stderr bytes.Buffer
		args := append([]string{flagName, missing, "-progress", "plain"}, quickArgs[:len(quickArgs)-2]...)
		code := Main(context.Background(), args, &stdout, &stderr)
		if code != 1 || stdout.Len() > 0 || strings.Contains(stderr.String(), "scenario on the") ||
			strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), missing) {
			t.Errorf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", flagName, missing, code, stdout.String(), stderr.String())
		}
	}
}

func TestADashWritesTheJSONToStdoutAndTheTextReportToStderr(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), append([]string{"-json", "-"}, quickArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Requests.Attempts == 0 {
		t.Fatalf("stdout is not the JSON report alone (%v):\n%s", err, stdout.String())
	}
	if !strings.Contains(stderr.String(), "Accounting: OK") {
		t.Errorf("the text report is not on stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat("-"); err == nil {
		os.Remove("-")
		t.Error("a file named - was written")
	}
}

func TestBothOutputsOnStdoutOrOneFileAreRefused(t *testing.T) {
	same := filepath.Join(t.TempDir(), "r")
	for _, args := range [][]string{{"-json", "-", "-html", "-"}, {"-json", same, "-html", same}} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), append(args, quickArgs...), &stdout, &stderr); code != 2 || stdout.Len() > 0 {
			t.Errorf("%v: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", args, code, stdout.String(), stderr.String())
		}
	}
}
