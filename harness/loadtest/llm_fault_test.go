package loadtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crsched/crs/harness/mockprovider"
)

// startMockOf starts a mock of cfg's limits on loopback with keys, of
// which fail answer 500 to everything; it stops with the test.
func startMockOf(t *testing.T, cfg Config, keys, fail []string) *mockprovider.Server {
	t.Helper()
	p, err := mockprovider.New(mockprovider.Config{Keys: keys, FailKeys: fail,
		RequestsPerMinute: cfg.LLM.RPM, TokensPerMinute: cfg.LLM.TPM, Latency: cfg.LLM.Latency})
	if err != nil {
		t.Fatal(err)
	}
	mock, err := mockprovider.Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	return mock
}

// A key that answers 500 to everything costs the calls nothing: each
// call that met it is retried on another key, and once the key has
// failed, one attempt at a time probes it until ejection takes it out.
func TestADeadKeyIsRoutedAround(t *testing.T) {
	t.Parallel()
	cfg := tinyLLM("crs")
	cfg.Resources = 3
	keys := []string{"k1", "k2", "k3"}
	mock := startMockOf(t, cfg, keys, []string{"k2"})
	cfg.LLM.Provider, cfg.LLM.Keys = mock.URL, keys
	r, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	lr := r.LLM
	if !r.Accounting.OK {
		t.Fatalf("accounting: %+v", r.Accounting.Checks)
	}
	if lr.Calls.Failed != 0 || lr.Calls.Served == 0 {
		t.Fatalf("%d calls failed, %d served: a dead key failed calls (%s)", lr.Calls.Failed, lr.Calls.Served, lr.FirstError)
	}
	// Every worker may have had a call on the key when it first failed;
	// after that, Eject probes fail in a row and eject it for longer than
	// the run.
	dead := mock.Stats().Keys[1]
	if limit := int64(cfg.Workers + cfg.Eject); dead.ServerErrors > limit {
		t.Fatalf("the dead key got %d calls, want at most %d", dead.ServerErrors, limit)
	}
}

// A run whose calls all fail (wrong keys) is not a run that kept the
// provider's limits: it fails, and says why.
func TestARunWhoseCallsMostlyFailExitsNonZero(t *testing.T) {
	t.Parallel()
	cfg := tinyLLM("crs")
	mock := startMockOf(t, cfg, []string{"sk-right"}, nil)
	var out, errs bytes.Buffer
	status := Main(context.Background(), []string{"-scenario", "llm", "-provider", mock.URL, "-keys", "sk-wrong-1,sk-wrong-2",
		"-workers", "2", "-duration", "200ms", "-tpm", "3000", "-progress", "off"}, &out, &errs)
	text := out.String() + errs.String()
	if status == 0 || !strings.Contains(text, "most calls failed") || !strings.Contains(text, "status 401") {
		t.Fatalf("status %d:\n%s", status, text)
	}
	if strings.Contains(text, "first: ") {
		t.Fatalf("the first error is prefixed twice:\n%s", text)
	}
}

// A call the provider refused without running it (a 4xx other than 429,
// or a 5xx) costs what the provider counts, a request and no tokens; a
// 5xx also counts as a failure of the key, toward its ejection, a 400
// does not.
func TestARefusedCallIsSettledToWhatTheProviderCounts(t *testing.T) {
	for _, tc := range []struct {
		status   int
		failures uint64
	}{{400, 0}, {404, 0}, {500, 1}, {503, 1}, {401, 1}} {
		c := crsTestClient(t)
		h, err := c.Pick(context.Background(), LLMCall{Prompt: 100, MaxTokens: 500, Estimate: 600})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Failed(LLMAnswer{Answered: tc.status}); err != nil {
			t.Fatal(err)
		}
		if left := remainingOf(t, c); left["tokens"] != 1000 || left["requests"] != 59 {
			t.Errorf("after a %d: %v left, want every token and all but one request", tc.status, left)
		}
		if st := c.s.Stats(); st.Failures != tc.failures || st.Holders != 0 {
			t.Errorf("after a %d: %d failures, %d holders", tc.status, st.Failures, st.Holders)
		}
	}
}

// A real provider's keys are secrets: the report names a long key the
// way providers' dashboards do, its start and its last four characters,
// and a short one (a test key, not a secret) as given, so that the
// provider's key-2 is the report's key-2.
func TestKeysAreNamedAsTheProviderNamesThem(t *testing.T) {
	c := tinyLLM("naive")
	c.LLM.Provider = "https://example.invalid"
	c.LLM.Keys = []string{"key-0", "key-1", "sk-proj-0123456789abcdefghijklmnopqrstuvwxyz-WXYZ"}
	r := &llmRun{cfg: c, keys: c.LLM.Keys}
	for i, want := range []string{"key-0", "key-1", "sk-...WXYZ"} {
		if got := r.keyName(i); got != want {
			t.Errorf("key %d named %q, want %q", i, got, want)
		}
	}
}

// -keys ” names no key: refused, not read as "no -keys".
func TestAnEmptyKeysFlagIsRefused(t *testing.T) {
	for _, keys := range []string{"", " "} {
		if _, err := ParseFlags([]string{"-scenario", "llm", "-keys", keys}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "keys") {
			t.Errorf("-keys %q: %v", keys, err)
		}
	}
}

// -provider-stats reads a mockprovider's GET /stats; another server's
// JSON is refused, not read as a provider that served nothing.
func TestProviderStatsRefuseWhatIsNotAMocksStats(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{}`, `{"keys": []}`, `{"keys": [{"key": "other"}], "elapsed_ns": 5}`, `[]`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
		s, err := readProviderStats(context.Background(), srv.URL, []string{"k1"})
		srv.Close()
		if err == nil || !errors.Is(err, ErrNotProviderStats) {
			t.Errorf("%s: read as %+v, %v", body, s, err)
		}
	}
}
