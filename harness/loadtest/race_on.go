//go:build race

package loadtest

// raceEnabled records in the report that the race detector was on, which
// slows everything several times over.
const raceEnabled = true
