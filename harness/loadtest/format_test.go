package loadtest

import (
	"math"
	"testing"
)

func TestGroupSeparatesThousandsOfEveryInteger(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{group(0), "0"},
		{group(999), "999"},
		{group(1000), "1,000"},
		{group(-1000), "-1,000"},
		{group(2248610), "2,248,610"},
		{group(int64(math.MaxInt64)), "9,223,372,036,854,775,807"},
		// Negating the smallest int64 overflows back to itself.
		{group(int64(math.MinInt64)), "-9,223,372,036,854,775,808"},
		// Above MaxInt64, a uint64 must not read as negative.
		{group(uint64(math.MaxUint64)), "18,446,744,073,709,551,615"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
