package loadtest

import (
	"strings"
	"testing"
)

// resourcesReport is a report on n resources, resource i acquired i times.
func resourcesReport(n int) *Report {
	r := &Report{Config: ConfigReport{Policy: "shared", Resources: n}}
	for i := range n {
		r.Resources = append(r.Resources, ResourceUse{Name: backendName(i), Acquisitions: uint64(i)})
	}
	return r
}

func TestAFewResourcesAreListedInFull(t *testing.T) {
	var b strings.Builder
	writeResources(&b, resourcesReport(maxResourceRows))
	for i := range maxResourceRows {
		if !strings.Contains(b.String(), backendName(i)+" ") {
			t.Fatalf("%s missing:\n%s", backendName(i), b.String())
		}
	}
}

func TestManyResourcesAreSummarised(t *testing.T) {
	const n = 100000
	var b strings.Builder
	writeResources(&b, resourcesReport(n))
	text := b.String()
	if lines := strings.Count(text, "\n"); lines > 2*maxResourceRows {
		t.Fatalf("%d lines for %d resources:\n%s", lines, n, text)
	}
	for _, want := range []string{
		backendName(n-1) + " ", backendName(0) + " ", // the busiest and the idlest
		"min 0, p50 50,000, p90 90,000, max 99,999; 1 never acquired",
		"99,990 more",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}

func TestTheHTMLReportSummarisesManyResourcesToo(t *testing.T) {
	const n = 10000
	r := resourcesReport(n)
	r.Timeline = []Sample{{}}
	var b strings.Builder
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if got := strings.Count(html, "<td>backend-"); got != 10 {
		t.Errorf("%d resource rows in the HTML table, want the 5 busiest and 5 idlest", got)
	}
	if !strings.Contains(html, "p90 9,000") {
		t.Error("the HTML report lacks the distribution of acquisitions")
	}
}
