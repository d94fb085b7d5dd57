package config_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

func TestLimitValidateReportsEachProblem(t *testing.T) {
	tests := []struct {
		name  string
		limit config.Limit
		want  error
	}{
		{"requests per minute", config.Limit{Name: "requests", Max: 600, Per: time.Minute}, nil},
		{"one unit per nanosecond", config.Limit{Name: "x", Max: 1, Per: 1}, nil},
		{"largest max", config.Limit{Name: "x", Max: config.MaxUnits, Per: time.Duration(math.MaxInt64)}, nil},
		{"empty name", config.Limit{Max: 1, Per: time.Second}, crserrors.ErrInvalidLimit},
		{"zero max", config.Limit{Name: "x", Max: 0, Per: time.Second}, crserrors.ErrInvalidLimit},
		{"negative max", config.Limit{Name: "x", Max: -1, Per: time.Second}, crserrors.ErrInvalidLimit},
		{"max above MaxUnits", config.Limit{Name: "x", Max: config.MaxUnits + 1, Per: time.Second}, crserrors.ErrInvalidLimit},
		{"largest int64 max", config.Limit{Name: "x", Max: math.MaxInt64, Per: time.Second}, crserrors.ErrInvalidLimit},
		{"zero per", config.Limit{Name: "x", Max: 1}, crserrors.ErrInvalidLimit},
		{"negative per", config.Limit{Name: "x", Max: 1, Per: -time.Second}, crserrors.ErrInvalidLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.limit.Validate()
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("%+v.Validate() = %v, want %v", tt.limit, err, tt.want)
			}
		})
	}
}

func TestValidateLimitsRejectsDuplicateNames(t *testing.T) {
	rpm := config.Limit{Name: "requests", Max: 600, Per: time.Minute}
	tpm := config.Limit{Name: "tokens", Max: 40000, Per: time.Minute}
	if err := config.ValidateLimits([]config.Limit{rpm, tpm}); err != nil {
		t.Fatalf("distinct names: %v", err)
	}
	if err := config.ValidateLimits(nil); err != nil {
		t.Fatalf("no limits: %v", err)
	}
	// The same name with other figures is still a duplicate: one bucket
	// per quantity, or a cost would not know which to spend from.
	perSecond := config.Limit{Name: "requests", Max: 10, Per: time.Second}
	err := config.ValidateLimits([]config.Limit{rpm, tpm, perSecond})
	if !errors.Is(err, crserrors.ErrDuplicateLimit) {
		t.Fatalf("duplicate name: %v, want ErrDuplicateLimit", err)
	}
}

// An invalid limit is reported even when it also repeats a name, so that
// the error names the problem a fix must address first.
func TestValidateLimitsReportsAnInvalidLimitFirst(t *testing.T) {
	limits := []config.Limit{
		{Name: "tokens", Max: 1, Per: time.Second},
		{Name: "tokens", Max: 0, Per: time.Second},
	}
	if err := config.ValidateLimits(limits); !errors.Is(err, crserrors.ErrInvalidLimit) {
		t.Fatalf("ValidateLimits = %v, want ErrInvalidLimit", err)
	}
}

func TestCostOfDefaultsToOnePerAcquisition(t *testing.T) {
	c := config.Cost{"tokens": 1200, "images": 0}
	for name, want := range map[string]int64{"tokens": 1200, "images": 0, "requests": 1} {
		if got := c.Of(name); got != want {
			t.Errorf("Of(%q) = %d, want %d", name, got, want)
		}
	}
	var none config.Cost
	if got := none.Of("requests"); got != 1 {
		t.Errorf("nil Cost: Of(requests) = %d, want 1", got)
	}
}

func TestCostValidateRejectsNegativeAndOversizedAmounts(t *testing.T) {
	tests := []struct {
		name string
		cost config.Cost
		want error
	}{
		{"nil", nil, nil},
		{"zero", config.Cost{"tokens": 0}, nil},
		{"largest", config.Cost{"tokens": config.MaxUnits}, nil},
		{"negative", config.Cost{"tokens": -1}, crserrors.ErrInvalidCost},
		{"smallest int64", config.Cost{"tokens": math.MinInt64}, crserrors.ErrInvalidCost},
		{"above MaxUnits", config.Cost{"tokens": config.MaxUnits + 1}, crserrors.ErrInvalidCost},
		{"largest int64", config.Cost{"requests": 1, "tokens": math.MaxInt64}, crserrors.ErrInvalidCost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cost.Validate()
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("%v.Validate() = %v, want %v", tt.cost, err, tt.want)
			}
		})
	}
}

// With several bad amounts the error names the first in sorted order, so
// that it does not change with the map's iteration order.
func TestCostValidateReportsTheSameErrorEachTime(t *testing.T) {
	c := config.Cost{"b": -2, "a": -1, "c": -3}
	first := c.Validate()
	for i := 0; i < 20; i++ {
		if err := c.Validate(); err.Error() != first.Error() {
			t.Fatalf("Validate() = %v, then %v", first, err)
		}
	}
}

func TestCostValidateNamesRejectsUnknownNames(t *testing.T) {
	limits := []config.Limit{
		{Name: "requests", Max: 600, Per: time.Minute},
		{Name: "tokens", Max: 40000, Per: time.Minute},
	}
	if err := (config.Cost{"tokens": 500}).ValidateNames(limits); err != nil {
		t.Fatalf("known name: %v", err)
	}
	if err := (config.Cost{"token": 500}).ValidateNames(limits); !errors.Is(err, crserrors.ErrUnknownLimit) {
		t.Fatalf("misspelt name: %v, want ErrUnknownLimit", err)
	}
	// Amounts are checked before names.
	if err := (config.Cost{"token": -1}).ValidateNames(limits); !errors.Is(err, crserrors.ErrInvalidCost) {
		t.Fatalf("bad amount under an unknown name: %v, want ErrInvalidCost", err)
	}
	if err := (config.Cost{"tokens": 1}).ValidateNames(nil); !errors.Is(err, crserrors.ErrUnknownLimit) {
		t.Fatalf("no limits: %v, want ErrUnknownLimit", err)
	}
}

// A provider's per-key limits as Limits, and what one chat call spends.
func ExampleLimit() {
	limits := []config.Limit{
		{Name: "requests", Max: 600, Per: time.Minute}, // 600 rpm
		{Name: "tokens", Max: 40000, Per: time.Minute}, // 40,000 tpm
	}
	fmt.Println(config.ValidateLimits(limits))

	// 200 prompt tokens plus at most 1,000 completion tokens; the
	// requests limit, not named, costs 1.
	call := config.Cost{"tokens": 1200}
	for _, l := range limits {
		fmt.Printf("%s: %d of %d per %v\n", l.Name, call.Of(l.Name), l.Max, l.Per)
	}

	twice := append(limits, config.Limit{Name: "tokens", Max: 1000, Per: time.Second})
	fmt.Println(errors.Is(config.ValidateLimits(twice), crserrors.ErrDuplicateLimit))
	fmt.Println(errors.Is(config.Cost{"tokens": -5}.Validate(), crserrors.ErrInvalidCost))
	// Output:
	// <nil>
	// requests: 1 of 600 per 1m0s
	// tokens: 1200 of 40000 per 1m0s
	// true
	// true
}
