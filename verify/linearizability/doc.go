// Package linearizability checks that the scheduler is linearizable: it
// records concurrent histories of its operations on a small key space and
// checks each one with porcupine against the sequential model of package
// model; histories of budgets (costs, settlements, limits changed while
// leased) against its budget model. The package has no code of its own
// outside its tests.
package linearizability
