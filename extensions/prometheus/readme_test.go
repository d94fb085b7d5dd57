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
	dto "github.com/prometheus/client_model/go"
)

// The README's metric table is what users read: it must list exactly what
// the collector exports, with the right types and labels.
func TestReadmeMetricTableMatchesTheCollector(t *testing.T) {
	sched, telemetry := knownState(t)
	families := gather(t, crsprom.NewCollector(sched, telemetry))
	// The metrics of the options, from a pool with budgets.
	keys := tokensPool(t, fakeclock.New(), "a")
	families = append(families, gather(t, crsprom.NewCollector(keys, nil, crsprom.WithBudgets(keys.Budgets)))...)
	// The tenants' and priorities', from a pool that has served one.
	families = append(families, gather(t, crsprom.NewCollector(servedTenantPool(t), nil))...)
	compareTable(t, "## Metrics", readmeTable(t, "## Metrics"), kinds(families))
}

func TestReadmeCRSNamesTableMatchesTheCollector(t *testing.T) {
	const heading = "## CRS v1.2.3's names, during an upgrade"
	sched, telemetry := knownState(t)
	families := gather(t, crsprom.NewCollector(sched, telemetry, crsprom.WithCRSNames()))
	compareTable(t, heading, readmeTable(t, heading), kinds(families))
}

// readmeTable returns the metrics listed in the table of the README's
// section under heading, each as "type labels" (sorted, comma-separated).
func readmeTable(t *testing.T, heading string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
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
	return documented
}

func gather(t *testing.T, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	return families
}

// kinds returns each family as readmeTable does.
func kinds(families []*dto.MetricFamily) map[string]string {
	exported := map[string]string{}
	for _, mf := range families {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		exported[mf.GetName()] = strings.ToLower(mf.GetType().String()) + " " + strings.Join(labels, ",")
	}
	return exported
}

func compareTable(t *testing.T, section string, documented, exported map[string]string) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		if got, ok := documented[name]; !ok {
			t.Errorf("README.md's %q does not list %s (%s)", section, name, exported[name])
		} else if got != exported[name] {
			t.Errorf("README.md's %q lists %s as %q, the collector exports %q", section, name, got, exported[name])
		}
	}
	for name := range documented {
		if _, ok := exported[name]; !ok {
			t.Errorf("README.md's %q lists %s, which the collector does not export", section, name)
		}
	}
}
