package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakePool is an extension's pool for the tests: the baseline, driven
// through the exported Pool interface as another command's pool would be.
type fakePool struct {
	m        *mutexPool
	finished atomic.Bool
}

type fakeAcquisition struct {
	p *mutexPool
	h mutexHandle
}

func (a *fakeAcquisition) Resource() int         { return a.h.r.id }
func (a *fakeAcquisition) End(failed bool) error { return a.p.end(&a.h, failed) }

func (p *fakePool) Acquire(ctx context.Context) (Acquisition, error) {
	a := &fakeAcquisition{p: p.m}
	if _, err := p.m.acquire(ctx, &a.h); err != nil {
		return nil, err
	}
	return a, nil
}

func (p *fakePool) Finish() error {
	p.m.finish()
	p.finished.Store(true)
	return nil
}

func (p *fakePool) State() (PoolState, error) {
	st := p.m.state()
	st.CountsCancelled = false // as a pool that does not count them
	st.Checks = []Check{{Name: "the fake pool finished first", OK: p.finished.Load(), Detail: "Finish before State"}}
	return st, nil
}

func (p *fakePool) Close() {}

// fakeExtension adds the fake pool, selected by -fake.
func fakeExtension(opened *int) Extension {
	var on bool
	return Extension{
		Name:  "fake",
		Title: func() string { return "the fake pool" },
		Usage: "With -fake, the run is on a fake pool.",
		Flags: func(fs *flag.FlagSet) { fs.BoolVar(&on, "fake", false, "run on the fake pool") },
		Configure: func(c *Config, given func(string) bool) (bool, error) {
			if !on {
				return false, nil
			}
			if !given("workers") {
				c.Workers = 7
			}
			if c.Eject > 0 {
				return true, errors.New("eject: the fake pool cannot eject")
			}
			return true, nil
		},
		Open: func(_ context.Context, cfg Config) (Pool, error) {
			*opened++
			return &fakePool{m: newMutexPool(cfg)}, nil
		},
	}
}

func TestAnExtensionsFlagsSelectItsPool(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	var opened int
	var stdout, stderr bytes.Buffer
	args := append([]string{"-fake", "-scenario", "cooldown", "-json", jsonPath}, quickArgs...)
	args = append(args[:len(args):len(args)], "-workers", "10", "-cooldown", "2ms")
	if code := MainWith(context.Background(), args, &stdout, &stderr, fakeExtension(&opened)); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if opened != 1 {
		t.Fatalf("the extension's pool was opened %d times", opened)
	}
	out := stdout.String()
	for _, want := range []string{"cooldown scenario, the fake pool", "Accounting: OK", "[ok  ] the fake pool finished first",
		"[skip] the pool's cancelled waits match: the fake pool does not count them", "[skip] the scheduler's events agree: the fake pool reports no events",
		"[ok  ] no acquisition within a cooldown"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Pool != "fake" || r.PoolTitle != "the fake pool" || r.Config.Workers != 10 || !r.Accounting.OK {
		t.Fatalf("pool %q (%q), %d workers, accounting %v", r.Pool, r.PoolTitle, r.Config.Workers, r.Accounting.OK)
	}
}

func TestAnExtensionSetsDefaultsAndRefusesWhatItCannotRun(t *testing.T) {
	var opened int
	ext := fakeExtension(&opened)
	o, err := ParseFlags([]string{"-fake"}, &bytes.Buffer{}, ext)
	if err != nil {
		t.Fatal(err)
	}
	if o.Config.Pool != "fake" || o.Config.Workers != 7 || o.ext == nil {
		t.Fatalf("pool %q, %d workers", o.Config.Pool, o.Config.Workers)
	}
	if o, err = ParseFlags(nil, &bytes.Buffer{}, ext); err != nil || o.Config.Pool != "crs" || o.ext != nil {
		t.Fatalf("without its flag the extension was selected: pool %q, %v", o.Config.Pool, err)
	}
	if _, err := ParseFlags([]string{"-fake", "-api", "lease", "-eject", "3"}, &bytes.Buffer{}, ext); err == nil {
		t.Fatal("the extension's refusal was ignored")
	}
	var help bytes.Buffer
	if _, err := ParseFlags([]string{"-h"}, &help, ext); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	if !strings.Contains(help.String(), "With -fake") || !strings.Contains(help.String(), "\n  -fake\n") {
		t.Fatalf("-h lacks the extension's usage or flag:\n%s", help.String())
	}
	if code := MainWith(context.Background(), []string{"-fake", "-workers", "0"}, &bytes.Buffer{}, &bytes.Buffer{}, ext); code != 2 || opened != 0 {
		t.Fatalf("a usage error exits %d, with %d pools opened", code, opened)
	}
}

func TestAPoolHandingOutAnUnknownResourceFailsTheRequestNotTheHarness(t *testing.T) {
	m := newMutexPool(quick(Normal))
	p := &extPool{p: &fakePool{m: m}, resources: 0} // whatever it hands out is unknown
	var h extHandle
	if _, err := p.acquire(context.Background(), &h); err == nil {
		t.Fatal("resource out of range accepted")
	}
	if st := m.state(); st.Holders != 0 {
		t.Fatalf("the unknown resource was not given back: %d holders", st.Holders)
	}
}
