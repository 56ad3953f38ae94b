package main

import (
	"bytes"
	"fmt"
)

// chart draws the runs' origin p99 and goodput over time, one panel each,
// as an SVG document: no dependency, readable in a browser or on GitHub.
func chart(runs []run, thresholdMS float64) []byte {
	const w, h, left, top, ph, gap = 760, 520, 60, 30, 190, 60
	colors := []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	maxT, maxP, maxG := 1.0, thresholdMS*2, 1.0
	for _, r := range runs {
		for _, x := range r.Windows {
			maxT = max(maxT, x.At)
			maxP = max(maxP, x.OriginP9)
			maxG = max(maxG, x.Goodput, r.Capacity)
		}
	}
	pw := float64(w - left - 20)
	panel := func(y0 float64, title string, maxV float64, val func(window) float64, ref float64, refLabel string) {
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-weight="bold">%s</text>`+"\n", left, y0-8, title)
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.0f" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, pw, ph)
		for i := 0; i <= 4; i++ {
			v := maxV * float64(i) / 4
			y := y0 + ph - ph*float64(i)/4
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%.0f</text>`+"\n", left-4, y+4, v)
		}
		if ref > 0 {
			y := y0 + ph - ph*ref/maxV
			fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="4 3"/>`+"\n", left, float64(left)+pw, y, y)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", float64(left)+pw-4, y-4, refLabel)
		}
		for i, r := range runs {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, colors[i%len(colors)])
			for _, x := range r.Windows {
				fmt.Fprintf(&b, "%.1f,%.1f ", float64(left)+pw*x.At/maxT, y0+ph-ph*min(val(x), maxV)/maxV)
			}
			b.WriteString(`"/>` + "\n")
		}
	}
	panel(top, "origin p99 (ms) per window", maxP, func(x window) float64 { return x.OriginP9 }, thresholdMS, "threshold")
	capacity := 0.0
	if len(runs) > 0 {
		capacity = runs[0].Capacity
	}
	panel(top+ph+gap, "goodput (200/s) per window", maxG, func(x window) float64 { return x.Goodput }, capacity, "origin capacity")
	y := float64(top + 2*ph + gap + 30)
	for i, r := range runs {
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="14" height="4" fill="%s"/><text x="%d" y="%.0f">%s</text>`+"\n",
			left+i*160, y-4, colors[i%len(colors)], left+i*160+20, y, r.Name)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%.0f" fill="#555">time (s); the flash crowd (10x the normal rate) runs from 1/4 to 3/4 of it</text>`+"\n", left, y+20)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
