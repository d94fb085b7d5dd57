package loadtest

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseLatencyReadsEachKindBack(t *testing.T) {
	for _, s := range []string{"uniform:20ms-500ms", "fixed:1ms", "exp:100ms", "uniform:0s-0s"} {
		l, err := ParseLatency(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		again, err := ParseLatency(l.String())
		if err != nil || again != l {
			t.Fatalf("%s: String() = %q reads back as %+v, %v", s, l.String(), again, err)
		}
	}
}

func TestParseLatencyRejectsMalformedDistributions(t *testing.T) {
	for _, s := range []string{"", "uniform", "uniform:5ms", "uniform:5ms-1ms", "fixed:-1s", "exp:0s", "normal:1ms", "fixed:soon"} {
		if _, err := ParseLatency(s); err == nil {
			t.Errorf("ParseLatency(%q) accepted", s)
		}
	}
}

func TestDefaultLatencyMeanIsTheSeeds(t *testing.T) {
	if got := DefaultLatency.Mean(); got != 260*time.Millisecond {
		t.Fatalf("mean %v, want 260ms", got)
	}
}

func TestDrawsStayWithinTheDistributionsBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	u := DefaultLatency
	f := Latency{Kind: "fixed", Min: time.Millisecond, Max: time.Millisecond}
	e := Latency{Kind: "exp", MeanExp: time.Millisecond}
	for i := 0; i < 10000; i++ {
		if d := u.Draw(r); d < u.Min || d > u.Max {
			t.Fatalf("uniform draw %v outside [%v, %v]", d, u.Min, u.Max)
		}
		if d := f.Draw(r); d != time.Millisecond {
			t.Fatalf("fixed draw %v", d)
		}
		if d := e.Draw(r); d < 0 || d > 100*time.Millisecond {
			t.Fatalf("exp draw %v outside [0, 100 means]", d)
		}
	}
}
