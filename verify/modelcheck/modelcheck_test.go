package modelcheck

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/crsched/crs/verify/model"
)

// defaultChecks is the number of random call sequences a plain go test
// runs; -rapid.checks overrides it.
const defaultChecks = 1000

// TestMain raises rapid's default number of checks (100) to
// defaultChecks unless -rapid.checks was given, and fails the run if a
// scheduler outlives the tests.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set && os.Getenv("RAPID_CHECKS") == "" {
		if err := flag.Set("rapid.checks", fmt.Sprint(defaultChecks)); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}

// TestSchedulerMatchesModel applies random call sequences to a scheduler
// (random shard count, policy, capacities and key space) and to the
// model, and compares every result, the per-key state, Len and Stats
// after every call, and the whole pool by draining it every few calls.
func TestSchedulerMatchesModel(t *testing.T) {
	rapid.Check(t, run(nil))
}

// TestModelCheckRejectsBrokenVariants runs the same property against
// each broken variant whose bug a single goroutine can expose, and
// requires rapid to find it. The concurrency-only variants are the
// linearizability checker's to catch.
func TestModelCheckRejectsBrokenVariants(t *testing.T) {
	restore := setFlags(t, map[string]string{"rapid.nofailfile": "true", "rapid.shrinktime": "2s"})
	defer restore()
	for _, b := range model.BrokenVariants() {
		if !b.Sequential {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			rec := &recorder{name: t.Name()}
			func() {
				defer func() {
					if p := recover(); p != nil && p != errStop {
						panic(p)
					}
				}()
				rapid.Check(rec, run(b.Wrap))
			}()
			if !rec.failed {
				t.Fatalf("rapid found no failure in broken variant %s", b.Name)
			}
			t.Logf("rejected:\n%s", firstLines(rec.log.String(), 12))
		})
	}
}

func setFlags(t *testing.T, values map[string]string) (restore func()) {
	t.Helper()
	old := map[string]string{}
	for name, v := range values {
		old[name] = flag.Lookup(name).Value.String()
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		for name, v := range old {
			_ = flag.Set(name, v)
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// recorder is a rapid.TB that records a failure instead of failing the
// test, so that a test can require rapid to fail.
type recorder struct {
	name   string
	failed bool
	log    strings.Builder
}

var errStop = new(int) // what FailNow panics with; recovered by the caller

func (r *recorder) Helper()                    {}
func (r *recorder) Name() string               { return r.name }
func (r *recorder) Logf(f string, args ...any) { fmt.Fprintf(&r.log, f+"\n", args...) }
func (r *recorder) Log(args ...any)            { fmt.Fprintln(&r.log, args...) }
func (r *recorder) Skipf(f string, args ...any) {
	panic(fmt.Sprintf("recorder: skip: "+f, args...))
}
func (r *recorder) Skip(args ...any) {
	panic(fmt.Sprint(append([]any{"recorder: skip: "}, args...)...))
}
func (r *recorder) SkipNow()                     { panic("recorder: skip") }
func (r *recorder) Errorf(f string, args ...any) { r.failed = true; r.Logf(f, args...) }
func (r *recorder) Error(args ...any)            { r.failed = true; r.Log(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.Errorf(f, args...); r.FailNow() }
func (r *recorder) Fatal(args ...any)            { r.Error(args...); r.FailNow() }
func (r *recorder) FailNow()                     { r.failed = true; panic(errStop) }
func (r *recorder) Fail()                        { r.failed = true }
func (r *recorder) Failed() bool                 { return r.failed }
