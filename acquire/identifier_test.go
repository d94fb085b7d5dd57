package acquire_test

import (
	"strings"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/internal/hash"
)

// bytesIdentifier takes HashIdentifier's general path (a pooled buffer)
// rather than the StringIdentifier shortcut.
type bytesIdentifier []byte

func (b bytesIdentifier) AppendAffinityBytes(dst []byte) []byte { return append(dst, b...) }

func TestHashIdentifierHashesTheAffinityBytes(t *testing.T) {
	for _, s := range []string{"", "a", "user-0", "user-99999", strings.Repeat("x", 100_000)} {
		want := hash.Bytes([]byte(s))
		if got := acquire.HashIdentifier(acquire.StringIdentifier(s)); got != want {
			t.Errorf("HashIdentifier(StringIdentifier(%.20q)) = %#x, want %#x", s, got, want)
		}
		if got := acquire.HashIdentifier(bytesIdentifier(s)); got != want {
			t.Errorf("HashIdentifier(bytesIdentifier(%.20q)) = %#x, want %#x", s, got, want)
		}
	}
}

func TestHashIdentifierDoesNotAllocate(t *testing.T) {
	tests := []struct {
		name string
		id   acquire.AffinityIdentifier
	}{
		{"StringIdentifier", acquire.StringIdentifier("user-12345")},
		{"other identifier", bytesIdentifier("session-abcdef-0123456789")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sink uint64
			allocs := testing.AllocsPerRun(1000, func() { sink += acquire.HashIdentifier(tt.id) })
			if allocs != 0 {
				t.Fatalf("HashIdentifier allocates %v times per call, want 0", allocs)
			}
			_ = sink
		})
	}
}
