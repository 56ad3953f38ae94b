package replay

import "html/template"

// Section is a part of a report computed over the same requests by
// another package (the fleet simulator's, fed by Config.Tap), rendered
// after the report's own parts: its Text in the terminal report, its
// HTML in the HTML report, its Data in the JSON.
type Section struct {
	// Title heads the section.
	Title string `json:"title"`
	// Data is the section's figures, in the JSON report.
	Data any `json:"data"`
	// Text is the section for a terminal, lines ending in '\n'.
	Text string `json:"-"`
	// HTML is the section's body in the HTML report, trusted as is: it
	// must be built by html/template or escape what it quotes.
	HTML template.HTML `json:"-"`
}
