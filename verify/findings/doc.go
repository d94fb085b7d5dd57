// Package findings holds the reproducers of the departures from the
// documented behaviour that the checks found (docs/TESTING.md lists
// them). Each test is written as the behaviour the documentation
// promises; each failed while its finding stood, and now guards its fix.
// The probabilistic ones run more rounds with -findings.long.
package findings
