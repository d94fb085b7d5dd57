package prometheus

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Collector; pass options to New or NewCollector.
type Option func(*options) error

type options struct {
	constLabels prometheus.Labels
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
// labels (state, shard, type, policy, strategy, le, quantile); a value
// must be non-empty UTF-8 (Prometheus treats an empty value as no label).
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
