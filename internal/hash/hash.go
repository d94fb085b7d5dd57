// Package hash holds the 64-bit mixing used for affinity routing, the
// hash ring and the affinity table.
package hash

// Mix64 is a bijective finalizer (splitmix64's): every input bit affects
// every output bit with probability close to one half.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Bytes hashes b with FNV-1a and then Mix64. FNV-1a alone leaves keys that
// differ only in their last bytes (user-1, user-2, ...) close together in
// the high bits, which is what a hash ring compares; the finalizer spreads
// them over the whole range.
func Bytes(b []byte) uint64 { return fnv1aMix(b) }

// String is Bytes for a string, without converting it to a []byte (which
// would copy it when the string is not a constant). String(s) ==
// Bytes([]byte(s)) for every s, so string and byte encodings of the same
// key route alike.
func String(s string) uint64 { return fnv1aMix(s) }

func fnv1aMix[S string | []byte](s S) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return Mix64(h)
}
