package accesslog

import (
	"bytes"
	"fmt"
	"strings"
)

// Format is an access-log format.
type Format uint8

// The formats. FormatAuto detects the format from the first lines.
const (
	FormatAuto     Format = iota
	FormatCombined        // NCSA combined (nginx and Apache default); also reads common
	FormatCommon          // NCSA common; the same parser as combined
	FormatJSON            // JSON lines
	FormatCSV             // timestamp,key[,cost][,path], or a header naming columns
)

var formatNames = [...]string{"auto", "combined", "common", "json", "csv"}

// String returns the format's flag name.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat reads a --format value: auto, combined, common, json (or
// jsonl, ndjson) or csv.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return FormatAuto, nil
	case "combined", "clf", "nginx", "apache":
		return FormatCombined, nil
	case "common":
		return FormatCommon, nil
	case "json", "jsonl", "ndjson":
		return FormatJSON, nil
	case "csv":
		return FormatCSV, nil
	}
	return 0, fmt.Errorf("unknown log format %q (want auto, combined, common, json or csv)", s)
}

// DetectFormat guesses the format of a sample of the input's first lines:
// JSON when the first non-blank line starts with '{', combined/common when
// a line parses as one, CSV otherwise.
func DetectFormat(sample []byte) Format {
	for len(sample) > 0 {
		line := sample
		if i := bytes.IndexByte(sample, '\n'); i >= 0 {
			line, sample = sample[:i], sample[i+1:]
		} else {
			sample = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '{' {
			return FormatJSON
		}
		var r Record
		r.Reset(0)
		if new(clfParser).Parse(line, &r) == nil {
			return FormatCombined
		}
		if bytes.IndexByte(line, ',') >= 0 {
			return FormatCSV
		}
	}
	return FormatCombined
}
