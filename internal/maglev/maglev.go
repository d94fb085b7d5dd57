// Package maglev builds Maglev lookup tables (Eisenbud et al., "Maglev: A
// Fast and Reliable Software Network Load Balancer", NSDI 2016): a table
// of M slots in which each of N backends owns M/N slots (give or take
// one), chosen from a per-backend permutation of the slots, so that a
// backend added or removed moves few slots of the others.
package maglev

import "math/bits"

// SlotsPerBackend sizes the table: with about 100 slots per backend, a
// backend's share of keys stays within about 1% of the mean (the paper's
// figure) before the keys' own randomness.
const SlotsPerBackend = 100

// Size returns the table size for n backends: a prime, so that every skip
// generates a full permutation of the slots.
func Size(n int) int {
	m := max(n*SlotsPerBackend, 101)
	for !prime(m) {
		m++
	}
	return m
}

// Build fills a table of m slots (m prime, from Size) for backends whose
// stable hashes are given, and returns each slot's backend index. Equal
// inputs give equal tables.
func Build(hashes []uint64, m int) []int32 {
	table := make([]int32, m)
	for i := range table {
		table[i] = -1
	}
	if len(hashes) == 0 {
		return table
	}
	offset := make([]uint64, len(hashes))
	skip := make([]uint64, len(hashes))
	next := make([]uint64, len(hashes))
	for i, h := range hashes {
		offset[i] = h % uint64(m)
		skip[i] = (h>>32|h<<32)%uint64(m-1) + 1
	}
	for filled := 0; ; {
		for i := range hashes {
			slot := (offset[i] + next[i]*skip[i]) % uint64(m)
			for table[slot] >= 0 {
				next[i]++
				slot = (offset[i] + next[i]*skip[i]) % uint64(m)
			}
			table[slot] = int32(i)
			next[i]++
			if filled++; filled == m {
				return table
			}
		}
	}
}

// Slot maps a key hash to a slot of a table of m slots, without the bias
// of a modulo: the high word of hash x m.
func Slot(hash uint64, m int) int {
	hi, _ := bits.Mul64(hash, uint64(m))
	return int(hi)
}

func prime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
