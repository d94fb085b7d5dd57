package prometheus

import "github.com/crsched/crs/stats"

// resourceStates lists the values of the state label of crs_resources and
// where stats.Stats counts each one. Adding a state is one line here; the
// dashboard sums by state and shows it without a change. TotalResources
// and InactiveResources are sums of these states and are not exported on
// their own.
var resourceStates = []struct {
	name  string
	count func(*stats.Stats) int
}{
	{"active", func(s *stats.Stats) int { return s.ActiveResources }},
	{"held", func(s *stats.Stats) int { return s.HeldResources }},
	{"excluded", func(s *stats.Stats) int { return s.ExcludedResources }},
	{"suspended", func(s *stats.Stats) int { return s.SuspendedResources }},
	{"ejected", func(s *stats.Stats) int { return s.EjectedResources }},
	{"rate_limited", func(s *stats.Stats) int { return s.RateLimitedResources }},
	{"draining", func(s *stats.Stats) int { return s.DrainingResources }},
}
