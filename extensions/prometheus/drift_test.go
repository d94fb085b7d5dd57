package prometheus_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// These tests keep the exporter in step with the core: a figure added to
// stats.Stats, an event type added to package events, or a count added to
// metrics.TelemetryStats fails them until it is exported (or listed below
// with the reason it is not).

// notExported lists the stats.Stats figures left out on purpose.
var notExported = map[string]string{
	"TotalResources":    `sum without (state) (crs_resources{state!="draining"})`,
	"InactiveResources": `sum without (state) (crs_resources{state!~"active|draining"})`,
	"EmptyHeaps":        `count without (shard) (crs_shard_active_resources == 0)`,
	"NonEmptyHeaps":     `count without (shard) (crs_shard_active_resources > 0)`,
}

// exportedValues gathers c and returns every sample value it exports
// (histogram buckets, sums and counts included), each with where it was
// seen.
func exportedValues(t *testing.T, c prometheus.Collector) map[float64]string {
	t.Helper()
	values := map[float64]string{}
	for _, mf := range gather(t, c) {
		for _, m := range mf.GetMetric() {
			where := mf.GetName() + labelString(m)
			switch {
			case m.Gauge != nil:
				values[m.GetGauge().GetValue()] = where
			case m.Counter != nil:
				values[m.GetCounter().GetValue()] = where
			case m.Histogram != nil:
				h := m.GetHistogram()
				values[h.GetSampleSum()] = where + " sum"
				values[float64(h.GetSampleCount())] = where + " count"
				for _, b := range h.GetBucket() {
					values[float64(b.GetCumulativeCount())] = where + " bucket"
				}
			}
		}
	}
	return values
}

func labelString(m *dto.Metric) string {
	var pairs []string
	for _, l := range m.GetLabel() {
		pairs = append(pairs, l.GetName()+"="+l.GetValue())
	}
	return "{" + strings.Join(pairs, ",") + "}"
}

func TestEveryStatsFigureIsExported(t *testing.T) {
	// Give every figure its own value, then look for each value in what is
	// exported.
	var st stats.Stats
	v := reflect.ValueOf(&st).Elem()
	want := map[string]float64{}
	for i := range v.NumField() {
		f, field := v.Field(i), v.Type().Field(i)
		unique := float64(1000 + 17*i)
		switch {
		case field.Type == reflect.TypeFor[time.Duration]():
			f.SetInt(int64(unique * float64(time.Second))) // exported in seconds
		case field.Type == reflect.TypeFor[stats.Histogram]():
			f.Set(reflect.ValueOf(stats.Histogram{Bounds: []time.Duration{time.Millisecond}, Counts: []uint64{uint64(unique), 1}}))
		case field.Type == reflect.TypeFor[[]int]():
			f.Set(reflect.ValueOf([]int{int(unique), int(unique) + 1}))
			want[field.Name+"[1]"] = unique + 1
		case field.Type == reflect.TypeFor[[]stats.TenantStats](), field.Type == reflect.TypeFor[[]stats.PriorityStats]():
			want = fillShares(f, field.Name, unique, want)
			continue
		case field.Type.Kind() == reflect.String:
			f.SetString(field.Name + "-value")
			continue // checked below, as label values
		case f.CanInt():
			f.SetInt(int64(unique))
		case f.CanUint():
			f.SetUint(uint64(unique))
		case notExported[field.Name] != "":
			continue
		default:
			t.Fatalf("stats.Stats.%s is a %v, which this test does not know how to check: extend it", field.Name, field.Type)
		}
		want[field.Name] = unique
	}

	values := exportedValues(t, crsprom.NewCollector(fixedStats(st), nil))
	for name, value := range want {
		base, _, _ := strings.Cut(name, "[")
		where, exported := values[value]
		switch {
		case notExported[base] != "":
			if exported {
				t.Errorf("stats.Stats.%s is exported (%s) but listed in notExported", name, where)
			}
		case !exported:
			t.Errorf("stats.Stats.%s is not exported: add it to states.go, scalars.go or tenants.go, or to notExported with the reason", name)
		}
	}

	info := crsprom.NewCollector(fixedStats(st), nil)
	if got := infoLabels(t, info); got != "policy=AcquirePolicy-value,strategy=AcquireStrategy-value" {
		t.Errorf("crs_scheduler_info labels = %s, want the policy and strategy of the stats", got)
	}
}

// fillShares gives a one-element slice of TenantStats or PriorityStats
// a unique value in each of its numeric fields and wants each exported.
func fillShares(f reflect.Value, name string, unique float64, want map[string]float64) map[string]float64 {
	f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	elem := f.Index(0)
	for j := range elem.NumField() {
		v, field := elem.Field(j), elem.Type().Field(j)
		value := unique + float64(j+1)
		switch {
		case v.Kind() == reflect.String:
			v.SetString(field.Name + "-value")
			continue
		case v.CanInt():
			v.SetInt(int64(value))
		case v.CanUint():
			v.SetUint(uint64(value))
		}
		if field.Name == "Priority" {
			continue // a label value, not a sample
		}
		want[name+"[0]."+field.Name] = value
	}
	return want
}

func infoLabels(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range families {
		if mf.GetName() == "crs_scheduler_info" && len(mf.GetMetric()) == 1 {
			return strings.Trim(labelString(mf.GetMetric()[0]), "{}")
		}
	}
	return "(no crs_scheduler_info)"
}

// fixedTelemetry is a telemetry source with set counts.
type fixedTelemetry metrics.TelemetryStats

func (f fixedTelemetry) Snapshot() metrics.TelemetryStats { return metrics.TelemetryStats(f) }

func TestEveryTelemetryCountIsExported(t *testing.T) {
	var ts metrics.TelemetryStats
	v := reflect.ValueOf(&ts).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(1000 + 17*i))
	}
	values := exportedValues(t, crsprom.NewCollector(fixedStats(stats.Stats{}), fixedTelemetry(ts)))
	for i := range v.NumField() {
		if where, ok := values[float64(1000+17*i)]; !ok || !strings.HasPrefix(where, "crs_events_total{") {
			t.Errorf("TelemetryStats.%s is not exported as crs_events_total: add its line to eventtypes.go", v.Type().Field(i).Name)
		}
	}
}

func TestEveryEventTypeOfTheCoreIsExported(t *testing.T) {
	for typ := events.EventType(0); typ.String() != "Unknown"; typ++ {
		// The label values are the names in lower case, as they were
		// before the core took CRS's capitalised names.
		name := strings.ToLower(typ.String())
		telemetry := metrics.NewTelemetryObserver[string]()
		telemetry.OnEvent(events.Event[string]{Type: typ})
		counts := eventCounts(t, crsprom.NewCollector(fixedStats(stats.Stats{}), telemetry))
		var nonZero []string
		for label, n := range counts {
			if n != 0 {
				nonZero = append(nonZero, label)
			}
		}
		if counts[name] != 1 || len(nonZero) != 1 {
			t.Errorf("one %s event counts in crs_events_total types %v, want only %q: add a TelemetryStats field and its line in eventtypes.go", name, nonZero, name)
		}
	}
}
