// Package findings reproduces the departures from the documented
// behaviour that the checks found (docs/TESTING.md lists them). Each test
// is written as the behaviour the documentation promises, so it fails
// while its finding stands; they are skipped unless -findings is given,
// so that CI stays green until they are fixed, when the skip can go.
package findings
