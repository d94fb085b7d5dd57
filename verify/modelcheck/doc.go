// Package modelcheck holds the model-based tests: rapid generates random
// call sequences, applies each to the scheduler and to the sequential
// model of package model from one goroutine, and compares every result
// and, after every call, the whole pool as the public API shows it. The
// package has no code of its own outside its tests.
package modelcheck
