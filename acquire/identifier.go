package acquire

import (
	"sync"

	"github.com/crsched/crs/internal/hash"
)

// identifierBuffers recycles the buffers that AffinityIdentifier encodings
// are appended to. The buffer is passed through an interface method, so
// escape analysis must put it on the heap; pooling makes that a one-off
// cost per P instead of one allocation per Acquire.
var identifierBuffers = sync.Pool{
	New: func() any {
		b := make([]byte, 0, 64)
		return &b
	},
}

// maxPooledBuffer bounds what is returned to the pool, so that one huge
// identifier does not pin its buffer for the life of the process.
const maxPooledBuffer = 4 << 10

// HashIdentifier hashes id's affinity bytes for GetShard. Hashing stays
// outside the ring so that callers can hash once and reuse the result, and
// so the ring's lookup stays a pure function of a uint64.
//
// It does not allocate in steady state. A StringIdentifier is hashed
// directly (the same value its bytes would give); other identifiers are
// encoded into a pooled buffer, so AppendAffinityBytes must not retain dst.
func HashIdentifier(id AffinityIdentifier) uint64 {
	if s, ok := id.(StringIdentifier); ok {
		return hash.String(string(s))
	}
	p := identifierBuffers.Get().(*[]byte)
	b := id.AppendAffinityBytes((*p)[:0])
	h := hash.Bytes(b)
	if cap(b) <= maxPooledBuffer {
		*p = b
		identifierBuffers.Put(p)
	}
	return h
}
