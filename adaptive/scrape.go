package adaptive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// maxScrape bounds the bytes read from a Prometheus endpoint: an origin's
// exposition is a few KiB to a few MiB; more is refused, not buffered.
const maxScrape = 8 << 20

// ErrGarbage reports an exposition that does not decode, or whose
// series has no usable value.
var ErrGarbage = errors.New("adaptive: unusable exposition")

// ErrNoSeries reports an exposition without the metric, or without a
// series whose labels match.
var ErrNoSeries = errors.New("adaptive: no matching series")

// Scraper reads one metric of an origin's Prometheus endpoint.
type Scraper struct {
	// URL is the endpoint.
	URL string
	// Metric and Labels select the series (see Source).
	Metric string
	Labels map[string]string
	// Timeout bounds one scrape; zero means no bound but the context's.
	Timeout time.Duration
	// Client makes the request; nil means http.DefaultClient.
	Client *http.Client
}

// Read scrapes the endpoint and returns the series' value. Any failure
// (down, slow, a non-200 answer, an exposition that does not parse, no
// such series, a NaN or infinite value) is an error.
func (s *Scraper) Read(ctx context.Context) (float64, error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("adaptive: scrape answered %s", resp.Status)
	}
	if expfmt.ResponseFormat(resp.Header).FormatType() == expfmt.TypeProtoDelim {
		return 0, fmt.Errorf("%w: a protobuf exposition (only the text format is read)", ErrGarbage)
	}
	return ParseMetric(io.LimitReader(resp.Body, maxScrape), s.Metric, s.Labels)
}

// ParseMetric decodes an exposition in the Prometheus text format
// (expfmt) and returns the value of the first series of the
// metric family named metric whose labels include labels: a gauge's,
// counter's or untyped value. It is the whole of what a scrape trusts of
// an origin's answer.
//
// The delimited protobuf format is not read: expfmt's decoder of it
// allocates whatever length a message claims (found by FuzzParseMetric:
// eight bytes asked for 200 TB), so a broken or hostile origin could end
// the gateway.
func ParseMetric(r io.Reader, metric string, labels map[string]string) (float64, error) {
	dec := expfmt.NewDecoder(r, expfmt.NewFormat(expfmt.TypeTextPlain))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("%w: %s", ErrNoSeries, metric)
			}
			return 0, fmt.Errorf("%w: %w", ErrGarbage, err)
		}
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !labelsMatch(m.GetLabel(), labels) {
				continue
			}
			var v float64
			switch {
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			default:
				return 0, fmt.Errorf("%w: %s is a %s, not a gauge, counter or untyped value", ErrGarbage, metric, mf.GetType())
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("%w: %s is %v", ErrGarbage, metric, v)
			}
			return v, nil
		}
		return 0, fmt.Errorf("%w: %s%v", ErrNoSeries, metric, labels)
	}
}

func labelsMatch(have []*dto.LabelPair, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, lp := range have {
			if lp.GetName() == k {
				found = lp.GetValue() == v
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
