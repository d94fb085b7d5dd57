package acquire

// RingPoints exposes the ring's sorted points (without the sentinel) so
// that tests can check GetShard against a plain binary search.
func RingPoints(r *ConsistentHashRing) (positions []uint64, owners []int) {
	for _, p := range r.points[:len(r.points)-1] {
		positions = append(positions, p.pos)
		owners = append(owners, int(p.owner))
	}
	return positions, owners
}
