package replay

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var reportHTML string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"stamp": stamp,
	"when":  when,
	"num":   thousands,
	"pct":   func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
	"pct4":  func(f float64) string { return fmt.Sprintf("%.4f%%", f) },
	"ratio": func(a, b int64) string { return fmt.Sprintf("%.2f×", float64(a)/float64(max(b, 1))) },
	"dur":   func(d time.Duration) string { return d.String() },
}).Parse(reportHTML))

// when writes a time for people: "2015-05-17 10:05:03 UTC" (with its
// fraction when it has one), or "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.999999999") + " UTC"
}

// thousands writes a whole number with thousands separators: 12,345.
func thousands(n any) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int64:
		v = x
	default:
		return fmt.Sprint(n)
	}
	s := strconv.FormatInt(v, 10)
	neg := v < 0
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// WriteHTML writes the report as one self-contained HTML page: tables, and
// charts drawn as inline SVG by inline script from the report's JSON,
// with no external resource, so the file opens offline. The charts are
// admitted versus refused over time per policy, the busiest keys'
// timelines with their refusals marked (Report.Timelines), and the
// distribution of per-key peak rates.
func WriteHTML(w io.Writer, rep *Report) error {
	return htmlTemplate.Execute(w, rep)
}
