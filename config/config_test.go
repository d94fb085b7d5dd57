package config_test

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

func valid() config.Config[int, int] {
	return config.Config[int, int]{
		Comparator: func(a, b int) int { return a - b },
		KeyFunc:    func(v int) int { return v },
	}
}

func TestValidateReportsEachProblem(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*config.Config[int, int])
		want   error
	}{
		{"valid zero heap count", func(*config.Config[int, int]) {}, nil},
		{"max heap count", func(c *config.Config[int, int]) { c.HeapCount = config.MaxHeapCount }, nil},
		{"exclusive", func(c *config.Config[int, int]) { c.AcquirePolicy = config.Exclusive }, nil},
		{"negative heap count", func(c *config.Config[int, int]) { c.HeapCount = -3 }, crserrors.ErrInvalidHeapCount},
		{"too many heaps", func(c *config.Config[int, int]) { c.HeapCount = config.MaxHeapCount + 1 }, crserrors.ErrInvalidHeapCount},
		{"nil comparator", func(c *config.Config[int, int]) { c.Comparator = nil }, crserrors.ErrNilComparator},
		{"nil key func", func(c *config.Config[int, int]) { c.KeyFunc = nil }, crserrors.ErrNilKeyFunc},
		{"largest policy", func(c *config.Config[int, int]) { c.AcquirePolicy = 255 }, crserrors.ErrInvalidAcquirePolicy},
		{"unknown policy", func(c *config.Config[int, int]) { c.AcquirePolicy = 2 }, crserrors.ErrInvalidAcquirePolicy},
		{"negative event queue", func(c *config.Config[int, int]) { c.EventQueueSize = -1 }, crserrors.ErrInvalidEventQueueSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(&c)
			// The sentinel itself: code written for CRS compares with ==.
			if _, err := config.Validate(c); err != tt.want {
				t.Fatalf("config.Validate() = %v, want %v", err, tt.want)
			}
		})
	}
}

// Validate returns the configuration New will use, with the defaults of
// its zero fields filled in, as CRS's Validate did for HeapCount.
func TestValidateFillsInTheDefaults(t *testing.T) {
	got, err := config.Validate(valid())
	if err != nil {
		t.Fatal(err)
	}
	if got.HeapCount != config.DefaultHeapCount {
		t.Errorf("HeapCount = %d, want DefaultHeapCount", got.HeapCount)
	}
	if got.EventQueueSize != config.DefaultEventQueueSize {
		t.Errorf("EventQueueSize = %d, want DefaultEventQueueSize", got.EventQueueSize)
	}
	if _, ok := got.Clock.(config.SystemClock); !ok {
		t.Errorf("Clock = %T, want config.SystemClock", got.Clock)
	}
	if got.AcquirePolicy != config.Shared || got.Ordering != config.ShardOrder {
		t.Errorf("AcquirePolicy, Ordering = %v, %v, want Shared, ShardOrder", got.AcquirePolicy, got.Ordering)
	}
	// A strategy has state (a rotation), so New makes one per scheduler
	// rather than Validate one per configuration.
	if got.AcquireStrategy != nil {
		t.Errorf("AcquireStrategy = %v, want nil", got.AcquireStrategy)
	}
}

// Fields that are set stay as they are.
func TestValidateKeepsWhatIsSet(t *testing.T) {
	c := valid()
	c.HeapCount, c.EventQueueSize, c.AcquirePolicy = 5, 7, config.Exclusive
	got, err := config.Validate(c)
	if err != nil {
		t.Fatal(err)
	}
	if got.HeapCount != 5 || got.EventQueueSize != 7 || got.AcquirePolicy != config.Exclusive {
		t.Errorf("Validate changed set fields: HeapCount %d, EventQueueSize %d, AcquirePolicy %v", got.HeapCount, got.EventQueueSize, got.AcquirePolicy)
	}
}

func TestPolicyNames(t *testing.T) {
	for p, want := range map[config.AcquirePolicy]string{
		config.Shared: "shared", config.Exclusive: "exclusive", 9: "AcquirePolicy(9)",
	} {
		if got := p.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(p), got, want)
		}
	}
}

// CRS's AcquirePolicy is a uint8; code written for it may convert one
// from a byte or compare it with constants up to 255.
func TestAcquirePolicyIsAByteAsInCRS(t *testing.T) {
	if k := reflect.TypeFor[config.AcquirePolicy]().Kind(); k != reflect.Uint8 {
		t.Fatalf("AcquirePolicy is a %v, want uint8", k)
	}
}

func TestEjectionDurationSaturatesInsteadOfOverflowing(t *testing.T) {
	e := config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Duration(math.MaxInt64/2 + 1)}
	if got := e.Duration(2); got != math.MaxInt64 {
		t.Fatalf("Duration(2) = %v, want the longest duration", got)
	}
	e.MaxTime = time.Hour * 24 * 365 * 200
	if got := e.Duration(3); got != e.MaxTime {
		t.Fatalf("Duration(3) = %v, want MaxTime", got)
	}
}
