package fleetsim

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
)

// tierColors are the tiers' colours in charts.
var tierColors = map[Tier]string{Local: "#8e24aa", Eventual: "#fb8c00", Gossip: "#1e88e5", Strict: "#43a047"}

var sectionTemplate = template.Must(template.New("fleet").Funcs(template.FuncMap{
	"chart":   chart,
	"color":   func(t Tier) template.CSS { return template.CSS(tierColors[t]) },
	"f1":      func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"f2":      func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
	"f0":      func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) },
	"pct":     func(f float64) string { return strconv.FormatFloat(100*f, 'g', 3, 64) },
	"weights": weights,
}).Parse(`{{range .}}
<h3>{{.Nodes}} nodes, {{.Routing}} routing{{weights .Weights}}: <code>{{.Policy}}</code></h3>
<p>Interval {{.Interval}}, latency {{.Latency}}, loss {{pct .Loss}}%. {{.Requests}} requests on {{.Keys}} keys over {{f1 .Seconds}} s of log;
the exact single counter admits {{.Exact.Admitted}} and refuses {{.Exact.Refused}}. Overshoot: admitted by the fleet, refused by the exact counter;
false refusals: the reverse.</p>
<table>
<tr><th>tier</th><th class="n">admitted</th><th class="n">refused</th><th class="n">overshoot</th><th class="n">%</th><th class="n">false refusals</th><th class="n">%</th><th class="n">messages/node/s</th><th class="n">bytes/node/s</th><th>worst key</th></tr>
{{range .Tiers}}<tr><td><i class="sw" style="background:{{color .Tier}}"></i>{{.Tier}}</td>
{{if .Unsupported}}<td colspan="9" class="muted">not simulated: {{.Unsupported}}</td>
{{else}}<td class="n">{{.Admitted}}</td><td class="n">{{.Refused}}</td><td class="n refused">{{.Overshoot}}</td><td class="n">{{f2 .OvershootPercent}}</td>
<td class="n refused">{{.FalseRefusals}}</td><td class="n">{{f2 .FalseRefusalPercent}}</td><td class="n">{{f1 .MessagesPerNodeSecond}}</td><td class="n">{{if .BytesEstimated}}~{{end}}{{f0 .BytesPerNodeSecond}}</td>
<td>{{with .WorstKeys}}{{with index . 0}}<code>{{.Key}}</code>: {{.Overshoot}} over, {{.FalseRefusals}} wrongly refused of {{.Requests}}{{end}}{{end}}</td>{{end}}</tr>
{{end}}</table>
<p class="muted">~: Redis traffic estimated from the script calls' sizes; gossip bytes are the encoded messages, without UDP/IP headers.</p>
{{chart .}}
{{end}}`))

// HTML returns the reports as a section of an HTML page: per report a
// table and a chart (inline SVG, no script) of each tier's overshoot
// (solid) and false refusals (dashed) accumulated over the log's time.
func HTML(reps []*Report) (template.HTML, error) {
	var b bytes.Buffer
	if err := sectionTemplate.Execute(&b, reps); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

// chart draws rep's cumulative series as an SVG line chart.
func chart(rep *Report) template.HTML {
	const w, h, left, right, top, bottom = 760.0, 240.0, 64.0, 150.0, 12.0, 28.0
	var peak int64 = 1
	n := 0
	for _, t := range rep.Tiers {
		for _, s := range [][]int64{t.Cumulative, t.CumulativeFalse} {
			if len(s) > 0 {
				peak = max(peak, s[len(s)-1])
				n = max(n, len(s))
			}
		}
	}
	if n == 0 {
		return ""
	}
	x := func(i int) float64 { return left + (w-left-right)*float64(i)/float64(max(n-1, 1)) }
	y := func(v int64) float64 { return top + (h-top-bottom)*(1-float64(v)/float64(peak)) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg class="fleet-chart" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="overshoot and false refusals over time, per tier" xmlns="http://www.w3.org/2000/svg" font-size="11" font-family="sans-serif">`, w, h, w, h)
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#999"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#999"/>`, left, top, left, h-bottom)
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%d</text><text x="%g" y="%g" text-anchor="end">0</text>`, left-4, top+8, peak, left-4, h-bottom)
	fmt.Fprintf(&b, `<text x="%g" y="%g">0 s</text><text x="%g" y="%g" text-anchor="end">%.0f s of log</text>`, left, h-8, w-right, h-8, rep.Seconds)
	row := 0
	for _, t := range rep.Tiers {
		if t.Unsupported != "" {
			continue
		}
		c := tierColors[t.Tier]
		for k, s := range [][]int64{t.Cumulative, t.CumulativeFalse} {
			if len(s) == 0 {
				continue
			}
			dash := ""
			if k == 1 {
				dash = ` stroke-dasharray="5,3"`
			}
			b.WriteString(`<polyline fill="none" stroke-width="2" stroke="` + c + `"` + dash + ` points="`)
			for i, v := range s {
				fmt.Fprintf(&b, "%.1f,%.1f ", x(i), y(v))
			}
			b.WriteString(`"/>`)
		}
		ly := top + 14 + 16*float64(row)
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/><text x="%g" y="%g">%s</text>`,
			w-right+8, ly-4, w-right+26, ly-4, c, w-right+30, ly, template.HTMLEscapeString(string(t.Tier)))
		row++
	}
	ly := top + 14 + 16*float64(row)
	fmt.Fprintf(&b, `<text x="%g" y="%g" fill="#666">solid: overshoot</text><text x="%g" y="%g" fill="#666">dashed: false refusals</text>`,
		w-right+8, ly+4, w-right+8, ly+18)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
