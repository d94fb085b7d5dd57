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
	{"other", otherInactive},
	{"draining", func(s *stats.Stats) int { return s.DrainingResources }},
}

// otherInactive counts the inactive resources that no finer state
// accounts for. A scheduler fills every state, so this is 0 for it; a
// stats source written for CRS v1.2.3 fills InactiveResources alone, and
// without this state its inactive resources would not be exported at
// all. A source whose states add up to more than InactiveResources (one
// that leaves InactiveResources 0) has none.
func otherInactive(s *stats.Stats) int {
	known := s.HeldResources + s.ExcludedResources + s.SuspendedResources +
		s.EjectedResources + s.RateLimitedResources
	return max(0, s.InactiveResources-known)
}
