package prometheus_test

import (
	"github.com/crsched/crs/extensions/metrics"
	crsprom "github.com/crsched/crs/extensions/prometheus"
)

// Code written for CRS v1.2.3 names the collector's arguments by CRS's
// names; a scheduler and a telemetry observer still satisfy them.
var (
	_ crsprom.MetricsProvider   = (*pool)(nil)
	_ crsprom.TelemetryProvider = (*metrics.TelemetryObserver[string])(nil)
)
