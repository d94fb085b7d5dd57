package prometheus_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/prometheus/client_golang/prometheus"
)

// The README's metric table is what users read: it must list exactly what
// the collector exports, with the right types and labels.
func TestReadmeMetricTableMatchesTheCollector(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Metrics\n")
	if !ok {
		t.Fatal(`README.md has no "## Metrics" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `(crs_[a-z_]+)` \\| ([a-z]+) \\| ([^|]*) \\|")
	code := regexp.MustCompile("`([a-z_]+)`")
	documented := map[string]string{} // name -> "type labels"
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		var labels []string
		for _, l := range code.FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, l[1])
		}
		slices.Sort(labels)
		documented[m[1]] = m[2] + " " + strings.Join(labels, ",")
	}

	sched, telemetry := knownState(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, telemetry))
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	// The metrics of the options, from a pool with budgets.
	keys := tokensPool(t, fakeclock.New(), "a")
	optional := prometheus.NewPedanticRegistry()
	optional.MustRegister(crsprom.NewCollector(keys, nil, crsprom.WithBudgets(keys.Budgets)))
	more, err := optional.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	families = append(families, more...)
	exported := map[string]string{}
	for _, mf := range families {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		exported[mf.GetName()] = strings.ToLower(mf.GetType().String()) + " " + strings.Join(labels, ",")
	}

	for _, name := range slices.Sorted(maps.Keys(exported)) {
		if got, ok := documented[name]; !ok {
			t.Errorf("README.md does not list %s (%s)", name, exported[name])
		} else if got != exported[name] {
			t.Errorf("README.md lists %s as %q, the collector exports %q", name, got, exported[name])
		}
	}
	for name := range documented {
		if _, ok := exported[name]; !ok {
			t.Errorf("README.md lists %s, which the collector does not export", name)
		}
	}
}
