package prometheus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/crsched/crs/config"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func poolLabel(name string) crsprom.Option {
	return crsprom.WithConstLabels(prometheus.Labels{"pool": name})
}

func TestConstLabelsLetTwoSchedulersShareARegistry(t *testing.T) {
	gpus := newPool(t, config.Config[*worker, string]{HeapCount: 2, AcquirePolicy: config.Exclusive})
	must(t, "add gpus", gpus.BatchAdd([]*worker{{"g1", 1}, {"g2", 2}, {"g3", 3}}))
	_, err := gpus.Acquire()
	must(t, "acquire a gpu", err)
	proxies := newPool(t, config.Config[*worker, string]{})
	must(t, "add a proxy", proxies.Add(&worker{"p1", 1}))

	reg := prometheus.NewPedanticRegistry()
	must(t, "register gpus", reg.Register(crsprom.NewCollector(gpus, nil, poolLabel("gpus"))))
	must(t, "register proxies", reg.Register(crsprom.NewCollector(proxies, nil, poolLabel("proxies"))))

	const want = `
# HELP crs_resources Resources by state; draining ones were removed while held and leave with their last holder.
# TYPE crs_resources gauge
crs_resources{pool="gpus",state="active"} 2
crs_resources{pool="gpus",state="draining"} 0
crs_resources{pool="gpus",state="ejected"} 0
crs_resources{pool="gpus",state="excluded"} 0
crs_resources{pool="gpus",state="held"} 1
crs_resources{pool="gpus",state="other"} 0
crs_resources{pool="gpus",state="rate_limited"} 0
crs_resources{pool="gpus",state="suspended"} 0
crs_resources{pool="proxies",state="active"} 1
crs_resources{pool="proxies",state="draining"} 0
crs_resources{pool="proxies",state="ejected"} 0
crs_resources{pool="proxies",state="excluded"} 0
crs_resources{pool="proxies",state="held"} 0
crs_resources{pool="proxies",state="other"} 0
crs_resources{pool="proxies",state="rate_limited"} 0
crs_resources{pool="proxies",state="suspended"} 0
# HELP crs_shards Heap shards of the scheduler (Config.HeapCount).
# TYPE crs_shards gauge
crs_shards{pool="gpus"} 2
crs_shards{pool="proxies"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "crs_resources", "crs_shards"); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryRefusesASecondSchedulerWithoutConstLabels(t *testing.T) {
	a := newPool(t, config.Config[*worker, string]{})
	b := newPool(t, config.Config[*worker, string]{})
	reg := prometheus.NewRegistry()
	must(t, "register the first", reg.Register(crsprom.NewCollector(a, nil)))
	err := reg.Register(crsprom.NewCollector(b, nil))
	var dup prometheus.AlreadyRegisteredError
	if !errors.As(err, &dup) {
		t.Fatalf("second Register without labels = %v, want AlreadyRegisteredError", err)
	}
}

func TestWithConstLabelsRefusesBadLabels(t *testing.T) {
	sched := newPool(t, config.Config[*worker, string]{})
	for name, opts := range map[string][]crsprom.Option{
		"empty name":                  {crsprom.WithConstLabels(prometheus.Labels{"": "x"})},
		"leading digit":               {crsprom.WithConstLabels(prometheus.Labels{"1pool": "x"})},
		"dash":                        {crsprom.WithConstLabels(prometheus.Labels{"po-ol": "x"})},
		"non-ASCII name":              {crsprom.WithConstLabels(prometheus.Labels{"pööl": "x"})},
		"reserved prefix":             {crsprom.WithConstLabels(prometheus.Labels{"__pool": "x"})},
		"the state label":             {crsprom.WithConstLabels(prometheus.Labels{"state": "x"})},
		"the histogram's le":          {crsprom.WithConstLabels(prometheus.Labels{"le": "x"})},
		"empty value":                 {crsprom.WithConstLabels(prometheus.Labels{"pool": ""})},
		"value not UTF-8":             {crsprom.WithConstLabels(prometheus.Labels{"pool": "\xff"})},
		"one good, one bad":           {crsprom.WithConstLabels(prometheus.Labels{"pool": "a", "shard": "x"})},
		"name given twice":            {poolLabel("a"), poolLabel("b")},
		"same name in a later option": {crsprom.WithConstLabels(prometheus.Labels{"region": "eu"}), poolLabel("a"), poolLabel("a")},
	} {
		c, err := crsprom.New(sched, nil, opts...)
		if !errors.Is(err, crsprom.ErrInvalidLabel) || c != nil {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalidLabel", name, c, err)
		}
	}
}

func TestWithConstLabelsKeepsItsOwnCopy(t *testing.T) {
	sched := newPool(t, config.Config[*worker, string]{})
	labels := prometheus.Labels{"pool": "before"}
	opt := crsprom.WithConstLabels(labels)
	labels["pool"] = "after"
	labels["extra"] = "x"
	const want = `
# HELP crs_shards Heap shards of the scheduler (Config.HeapCount).
# TYPE crs_shards gauge
crs_shards{pool="before"} 1
`
	if err := testutil.CollectAndCompare(crsprom.NewCollector(sched, nil, opt), strings.NewReader(want), "crs_shards"); err != nil {
		t.Fatal(err)
	}
}
