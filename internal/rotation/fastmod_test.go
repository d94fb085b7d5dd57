package rotation

import "testing"

func TestFastmodMatchesTheRemainder(t *testing.T) {
	for n := 2; n <= 1030; n++ {
		for _, c := range []uint32{0, 1, 2, uint32(n - 1), uint32(n), uint32(n + 1), 12345, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1<<32 - 2, uint32(n) * 3} {
			if got, want := fastmod(c, n), int(c%uint32(n)); got != want {
				t.Fatalf("fastmod(%d, %d) = %d, want %d", c, n, got, want)
			}
		}
	}
}
