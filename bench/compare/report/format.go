package main

import (
	"fmt"
	"math"
)

// missing stands for a figure the run did not produce (a filtered or
// failed benchmark).
const missing = "–"

// duration formats nanoseconds with three significant digits in the unit
// that suits them, as benchstat does.
func duration(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	default:
		return fmt.Sprintf("%.3g ns", ns)
	}
}

func ratioText(x float64) string { return fmt.Sprintf("%.2fx", x) }

// count formats an allocation count or a rank: whole numbers without
// decimals, medians that fall between two whole numbers with one.
func count(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

// figure formats a rank figure: three significant digits below 100, whole
// numbers above (never an exponent).
func figure(x float64) string {
	if math.Abs(x) >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}
