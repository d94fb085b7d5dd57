package config_test

import (
	"errors"
	"testing"

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
		{"negative policy", func(c *config.Config[int, int]) { c.AcquirePolicy = -1 }, crserrors.ErrInvalidAcquirePolicy},
		{"unknown policy", func(c *config.Config[int, int]) { c.AcquirePolicy = 2 }, crserrors.ErrInvalidAcquirePolicy},
		{"negative event queue", func(c *config.Config[int, int]) { c.EventQueueSize = -1 }, crserrors.ErrInvalidEventQueueSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(&c)
			if err := c.Validate(); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Validate() = %v, want %v", err, tt.want)
			}
			if err := config.Validate(c); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("config.Validate() = %v, want %v", err, tt.want)
			}
		})
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
