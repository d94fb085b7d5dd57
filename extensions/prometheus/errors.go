package prometheus

import "errors"

// Sentinel errors. Test for them with errors.Is; the errors returned wrap
// them with the detail.
var (
	// ErrNilStats: New was given no stats source, or a nil pointer as one,
	// or WithBudgets a nil function.
	ErrNilStats = errors.New("crs/prometheus: nil stats source")
	// ErrInvalidLabel: a constant label with an invalid or reserved name,
	// an empty or non-UTF-8 value, or a name given twice.
	ErrInvalidLabel = errors.New("crs/prometheus: invalid constant label")
	// ErrInvalidStats: a Stats snapshot that cannot be exported as it is
	// (a histogram whose buckets do not match its bounds, more shards than
	// config.MaxHeapCount). Only a custom stats source can produce one; the
	// scrape reports it for the metric concerned and exports the others.
	ErrInvalidStats = errors.New("crs/prometheus: invalid stats snapshot")
)
