package loadtest

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the full report, indented. With -compare the
// baseline's report is its "baseline" field. A run of the llm scenario
// writes its LLMReport, the naive client's as its "baseline"; one of the
// tenants scenario its TenantsReport.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if r.LLM != nil {
		doc := *r.LLM
		if r.Baseline != nil {
			doc.Baseline = r.Baseline.LLM
		}
		return enc.Encode(&doc)
	}
	if r.Tenants != nil {
		return enc.Encode(r.Tenants)
	}
	return enc.Encode(r)
}
