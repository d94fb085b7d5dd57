package hash

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestStringHashesLikeBytes(t *testing.T) {
	for _, s := range []string{"", "a", "user-0", "user-1", strings.Repeat("ab", 1000)} {
		if got, want := String(s), Bytes([]byte(s)); got != want {
			t.Errorf("String(%.20q) = %#x, Bytes = %#x", s, got, want)
		}
	}
}

func TestBytesMatchesFNV1aThenMix64(t *testing.T) {
	// FNV-1a of the empty input is the offset basis; of "a" it is the
	// published test vector 0xaf63dc4c8601ec8c.
	tests := []struct {
		in      string
		fnv1a64 uint64
	}{
		{"", 0xcbf29ce484222325},
		{"a", 0xaf63dc4c8601ec8c},
		{"foobar", 0x85944171f73967e8},
	}
	for _, tt := range tests {
		if got, want := Bytes([]byte(tt.in)), Mix64(tt.fnv1a64); got != want {
			t.Errorf("Bytes(%q) = %#x, want Mix64(%#x) = %#x", tt.in, got, tt.fnv1a64, want)
		}
	}
}

func TestMix64SpreadsSingleBitChanges(t *testing.T) {
	// Flipping one input bit should flip about half the output bits; a
	// mean far from 32 would mean a weak finalizer.
	rng := rand.New(rand.NewPCG(1, 1))
	const samples = 2000
	total := 0
	for range samples {
		x := rng.Uint64()
		bit := uint64(1) << rng.IntN(64)
		d := Mix64(x) ^ Mix64(x^bit)
		for ; d != 0; d &= d - 1 {
			total++
		}
	}
	if mean := float64(total) / samples; mean < 30 || mean > 34 {
		t.Fatalf("one flipped input bit flips %.2f output bits on average, want about 32", mean)
	}
}
