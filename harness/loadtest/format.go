package loadtest

import (
	"fmt"
	"strconv"
	"time"
)

// group writes an integer with thousands separators: 2,248,610. It
// groups the digits strconv writes rather than negating n, as the
// smallest int64 has no positive counterpart.
func group[N int64 | uint64 | int](n N) string {
	var s string
	if n < 0 {
		s = strconv.FormatInt(int64(n), 10)
	} else {
		s = strconv.FormatUint(uint64(n), 10)
	}
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

// dur writes a duration with three significant digits: 7.59µs, 260ms,
// 1.25s, which is what the histogram can vouch for.
func dur[N int64 | time.Duration](n N) string {
	d := time.Duration(n)
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", int64(d))
	case d < time.Millisecond:
		return sig3(float64(d)/1e3) + "µs"
	case d < time.Second:
		return sig3(float64(d)/1e6) + "ms"
	}
	return sig3(float64(d)/1e9) + "s"
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// pct writes a fraction as a percentage with two decimals.
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + "%" }
