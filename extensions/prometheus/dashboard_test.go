package prometheus_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The dashboard's JSON, as much of it as these tests read.
type dashboard struct {
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"` // a string, or {"query": ...}
			Datasource *dataSource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int         `json:"id"`
	Title      string      `json:"title"`
	Type       string      `json:"type"`
	Datasource *dataSource `json:"datasource"`
	Targets    []struct {
		Expr       string      `json:"expr"`
		Datasource *dataSource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

type dataSource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile("dashboards/crs.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboards/crs.json: %v", err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// queries returns every PromQL expression of the dashboard: the panels'
// and the template variables'.
func queries(t *testing.T, d dashboard) []string {
	t.Helper()
	var qs []string
	for _, p := range allPanels(d.Panels) {
		for _, target := range p.Targets {
			qs = append(qs, target.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query: %v", v.Name, err)
		}
		qs = append(qs, q.Query)
	}
	return qs
}

// family is what the collector exports under one name.
type family struct {
	labels map[string][]string // label name -> values seen
}

// exportedFamilies gathers a collector with telemetry and a pool label,
// and one of a pool that has served a tenant, and indexes its series by every name a query can use: a histogram's
// _bucket (with le), _sum and _count as well as its own name.
func exportedFamilies(t *testing.T) map[string]family {
	t.Helper()
	sched, telemetry := knownState(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, telemetry, poolLabel("gpus")))
	reg.MustRegister(crsprom.NewCollector(servedTenantPool(t), nil, poolLabel("keys")))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]family{}
	for _, mf := range mfs {
		f := family{labels: map[string][]string{}}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				f.labels[l.GetName()] = append(f.labels[l.GetName()], l.GetValue())
			}
		}
		out[mf.GetName()] = f
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			out[mf.GetName()+"_sum"] = f
			out[mf.GetName()+"_count"] = f
			bucket := family{labels: map[string][]string{"le": nil}}
			for k, v := range f.labels {
				bucket.labels[k] = v
			}
			out[mf.GetName()+"_bucket"] = bucket
		}
	}
	return out
}

// targetLabels are attached by Prometheus at scrape time, not by the
// collector.
var targetLabels = []string{"instance", "job"}

var (
	metricRef   = regexp.MustCompile(`\bcrs_[a-zA-Z0-9_]*`)
	selector    = regexp.MustCompile(`\b(crs_[a-zA-Z0-9_]*)\s*\{([^}]*)\}`)
	matcher     = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	grouping    = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelValues = regexp.MustCompile(`label_values\([^,]+,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
)

func TestDashboardQueriesOnlyWhatTheCollectorExports(t *testing.T) {
	exported := exportedFamilies(t)
	d := loadDashboard(t)
	qs := queries(t, d)
	if len(qs) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, q := range qs {
		if strings.Count(q, "(") != strings.Count(q, ")") || strings.Count(q, "{") != strings.Count(q, "}") {
			t.Errorf("unbalanced brackets in %q", q)
		}
		names := metricRef.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("%q uses no crs_ metric", q)
		}
		known := map[string]bool{"pool": true} // the constant label the dashboard filters on
		for _, l := range targetLabels {
			known[l] = true
		}
		for _, name := range names {
			f, ok := exported[name]
			if !ok {
				t.Errorf("%q uses %s, which the collector does not export", q, name)
				continue
			}
			for l := range f.labels {
				known[l] = true
			}
		}
		for _, sel := range selector.FindAllStringSubmatch(q, -1) {
			f, ok := exported[sel[1]]
			if !ok {
				continue // reported above
			}
			for _, m := range matcher.FindAllStringSubmatch(sel[2], -1) {
				label, op, value := m[1], m[2], m[3]
				if _, own := f.labels[label]; !own && !slices.Contains(targetLabels, label) {
					t.Errorf("%q matches on %s, which %s does not have", q, label, sel[1])
				}
				if op == "=" && f.labels[label] != nil && !slices.Contains(f.labels[label], value) {
					t.Errorf("%q matches %s=%q, a value %s never has (it has %v)", q, label, value, sel[1], f.labels[label])
				}
			}
		}
		for _, g := range grouping.FindAllStringSubmatch(q, -1) {
			for _, l := range strings.Split(g[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !known[l] {
					t.Errorf("%q groups by %s, a label none of its metrics has", q, l)
				}
			}
		}
		for _, lv := range labelValues.FindAllStringSubmatch(q, -1) {
			if !known[lv[1]] {
				t.Errorf("%q lists values of %s, a label its metric does not have", q, lv[1])
			}
		}
	}
}

func TestDashboardShowsEveryExportedMetric(t *testing.T) {
	all := strings.Join(queries(t, loadDashboard(t)), "\n")
	for name := range exportedFamilies(t) {
		if strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_bucket") {
			continue // parts of a histogram, which is checked by its name
		}
		if !regexp.MustCompile(`\b` + name + `(_bucket)?\b`).MatchString(all) {
			t.Errorf("no panel or variable of the dashboard uses %s", name)
		}
	}
}

func TestDashboardPanelsQueryTheChosenDataSource(t *testing.T) {
	d := loadDashboard(t)
	var dsVar bool
	for _, v := range d.Templating.List {
		var query string
		_ = json.Unmarshal(v.Query, &query)
		if v.Name == "datasource" && v.Type == "datasource" && query == "prometheus" {
			dsVar = true
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s does not query ${datasource}", v.Name)
		}
	}
	if !dsVar {
		t.Fatal(`no "datasource" variable of type datasource for prometheus`)
	}
	ids := map[int]string{}
	for _, p := range allPanels(d.Panels) {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use ${datasource}", p.Title)
		}
		for _, target := range p.Targets {
			if target.Datasource == nil || target.Datasource.UID != "${datasource}" {
				t.Errorf("a query of panel %q does not use ${datasource}", p.Title)
			}
		}
	}
}

func TestDashboardShowsWaitTimeQuantiles(t *testing.T) {
	all := strings.Join(queries(t, loadDashboard(t)), "\n")
	for _, q := range []string{"0.5", "0.99"} {
		if !strings.Contains(all, "histogram_quantile("+q+", sum by (le") {
			t.Errorf("no histogram_quantile(%s, ...) over the wait histogram's buckets", q)
		}
	}
}
