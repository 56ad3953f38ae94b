package replay

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the report as one indented JSON document, for scripts.
// Field names are stable; times are RFC 3339 in UTC, durations are
// nanoseconds in fields ending in _ns.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
