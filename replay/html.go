package replay

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"
)

//go:embed report.html.tmpl
var reportHTML string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"stamp": stamp,
	"pct":   func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
	"pct4":  func(f float64) string { return fmt.Sprintf("%.4f%%", f) },
	"ratio": func(a, b int64) string { return fmt.Sprintf("%.2f×", float64(a)/float64(max(b, 1))) },
	"dur":   func(d time.Duration) string { return d.String() },
}).Parse(reportHTML))

// WriteHTML writes the report as one self-contained HTML page: tables, and
// charts drawn as inline SVG by inline script from the report's JSON,
// with no external resource, so the file opens offline. The charts are
// admitted versus refused over time per policy, the busiest keys'
// timelines with their refusals marked (Report.Timelines), and the
// distribution of per-key peak rates.
func WriteHTML(w io.Writer, rep *Report) error {
	return htmlTemplate.Execute(w, rep)
}
