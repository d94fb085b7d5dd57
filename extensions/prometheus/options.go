package prometheus

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/crsched/crs/scheduler"
	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Collector; pass options to New or NewCollector.
type Option func(*options) error

type options struct {
	constLabels prometheus.Labels
	budgets     budgetSource // nil: no crs_budget_remaining
	crsNames    bool
}

// budgetSource calls yield with each budget of each resource: the
// resource's key as a label value, the limit's name, the units left.
type budgetSource func(yield func(resource, limit string, remaining int64) bool)

// WithBudgets makes the collector export crs_budget_remaining{resource,
// limit}: the units left now in each budget (config.Config.Limits) of
// each resource, negative for one in debt, read at every scrape from
// budgets, which is the scheduler's Budgets method:
//
//	crsprom.New(sched, telemetry, crsprom.WithBudgets(sched.Budgets))
//
// It is off by default because it labels series by resource key: one
// series per resource and limit, which a pool of many thousands of
// resources may not want to store. The scrape reads each shard under its
// lock into a copy and builds the metrics with no lock held. A key that
// is not a string is formatted with fmt.Sprint; two keys that format
// alike, or a key removed and added again during a scrape, make that
// scrape report the series twice, which Prometheus refuses.
func WithBudgets[ID comparable](budgets func(yield func(ID, scheduler.Budget) bool)) Option {
	return func(o *options) error {
		if budgets == nil {
			return fmt.Errorf("%w: WithBudgets(nil)", ErrNilStats)
		}
		o.budgets = func(yield func(string, string, int64) bool) {
			budgets(func(id ID, b scheduler.Budget) bool {
				return yield(keyLabel(id), b.Limit, b.Remaining)
			})
		}
		return nil
	}
}

// keyLabel makes a resource key a label value.
func keyLabel[ID comparable](id ID) string {
	if s, ok := any(id).(string); ok {
		return labelValue(s)
	}
	return labelValue(fmt.Sprint(id))
}

// WithConstLabels adds labels with fixed values to every metric of the
// collector, so that the collectors of several schedulers can share one
// registry: WithConstLabels(prometheus.Labels{"pool": "gpus"}). Every
// collector in a registry must use the same label names (Prometheus
// requires one label set per metric name), with different values. The
// dashboard in dashboards/ shows a label named "pool".
//
// A name must match [a-zA-Z_][a-zA-Z0-9_]*, must not start with "__"
// (reserved by Prometheus) and must not be one of the collector's own
// labels (state, shard, type, policy, strategy, resource, limit, tenant,
// priority, le, quantile); a value must be non-empty UTF-8 (Prometheus
// treats an empty value as no label).
// New returns ErrInvalidLabel otherwise, and for a name given twice.
func WithConstLabels(labels prometheus.Labels) Option {
	labels = maps.Clone(labels) // the caller may reuse its map
	return func(o *options) error {
		// Sorted, so that the error for several bad labels is always the
		// same one.
		for _, name := range slices.Sorted(maps.Keys(labels)) {
			value := labels[name]
			if err := checkConstLabel(name, value); err != nil {
				return err
			}
			if _, dup := o.constLabels[name]; dup {
				return fmt.Errorf("%w: %q given twice", ErrInvalidLabel, name)
			}
			if o.constLabels == nil {
				o.constLabels = prometheus.Labels{}
			}
			o.constLabels[name] = value
		}
		return nil
	}
}

func checkConstLabel(name, value string) error {
	switch {
	case !isLegacyLabelName(name):
		return fmt.Errorf("%w: name %q is not [a-zA-Z_][a-zA-Z0-9_]*", ErrInvalidLabel, name)
	case strings.HasPrefix(name, "__"):
		return fmt.Errorf("%w: name %q starts with the reserved prefix __", ErrInvalidLabel, name)
	case slices.Contains(ownLabels, name):
		return fmt.Errorf("%w: name %q is one of the collector's own labels", ErrInvalidLabel, name)
	case value == "":
		return fmt.Errorf("%w: %q has an empty value", ErrInvalidLabel, name)
	case !utf8.ValidString(value):
		return fmt.Errorf("%w: %q has a value that is not UTF-8", ErrInvalidLabel, name)
	}
	return nil
}

// isLegacyLabelName accepts the label names every Prometheus version and
// PromQL query accepts unquoted; client_golang itself now allows any
// UTF-8, which older servers and the dashboard's queries do not.
func isLegacyLabelName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		letter := r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
