package adaptive

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseHeaderValue: any bytes an origin (or whatever answers in its
// place) sends in the header field are refused or read as a finite
// number that strconv reads the same way; never a panic.
func FuzzParseHeaderValue(f *testing.F) {
	for _, s := range []string{"73", " 12.5% ", "NaN", "1e999", "-0", "", "0x1p3", "9%%"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := ParseHeaderValue(b)
		if !ok {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%q read as %v", b, v)
		}
		s := strings.TrimSuffix(strings.TrimSpace(string(b)), "%")
		if w, err := strconv.ParseFloat(s, 64); err != nil || w != v {
			t.Fatalf("%q read as %v, strconv says %v, %v", b, v, w, err)
		}
	})
}

// FuzzParseMetric: whatever a scraped endpoint answers, ParseMetric
// returns a finite value or an error, never a panic.
func FuzzParseMetric(f *testing.F) {
	f.Add([]byte(exposition), "origin_cpu_percent", "core", "all")
	f.Add([]byte("queue 1\n"), "queue", "", "")
	f.Add([]byte("# TYPE q histogram\nq_bucket{le=\"+Inf\"} 3\nq_sum 1\nq_count 3\n"), "q", "", "")
	f.Fuzz(func(t *testing.T, data []byte, metric, label, value string) {
		var labels map[string]string
		if label != "" {
			labels = map[string]string{label: value}
		}
		v, err := ParseMetric(bytes.NewReader(data), metric, labels)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q read as %v", data, v)
		}
	})
}
