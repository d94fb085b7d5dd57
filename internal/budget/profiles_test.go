package budget

import (
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

func TestUnknownNamesTheFirstNameNoProfileHas(t *testing.T) {
	var p Profiles
	cost := config.Cost{"tokns": 5, "requests": 1, "b": 1}
	if _, unknown := p.Unknown(cost); unknown {
		t.Fatal("with no resource counted, a name was found unknown")
	}
	rpm := []config.Limit{{Name: "requests", Max: 10, Per: time.Minute}}
	tpm := []config.Limit{{Name: "tokens", Max: 10, Per: time.Minute}}
	p.Change(rpm, 2)
	p.Change(tpm, 1)
	if name, unknown := p.Unknown(cost); !unknown || name != "b" {
		t.Fatalf("Unknown = %q, %v; want b, true", name, unknown)
	}
	if _, unknown := p.Unknown(config.Cost{"tokens": 1, "requests": 1}); unknown {
		t.Fatal("names of two profiles found unknown")
	}
	p.Change(tpm, -1)
	if name, unknown := p.Unknown(config.Cost{"tokens": 1}); !unknown || name != "tokens" {
		t.Fatalf("after the tokens profile left: Unknown = %q, %v", name, unknown)
	}
}
