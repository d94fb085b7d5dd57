package loadtest

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the full report, indented. With -compare the
// baseline's report is its "baseline" field.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
