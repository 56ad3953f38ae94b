package replay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/limit"
)

// Policy is one policy to simulate, with the name reports show for it.
type Policy struct {
	// Name labels the policy in reports; empty means Policy.String().
	Name string
	// Policy is the algorithm and its parameters, exactly as a store would
	// apply it.
	Policy limit.Policy
}

// label returns the report name.
func (p Policy) label() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Policy.String()
}

// ParsePolicy reads a --policy value: ALGORITHM:PARAM=VALUE,... with
//
//	fixed_window, sliding_log, sliding_window: limit=N, window=PERIOD
//	    (or rate=N/PERIOD for both at once)
//	token_bucket: rate=N/PERIOD, burst=N (default: the rate's count)
//	leaky_bucket: rate=N/PERIOD, burst=N, mode=shape|police, delay=N
//
// and an optional name=LABEL. Rates and periods use limit.ParseRate and
// limit.ParsePeriod ("10/s", "100/1m", "7/90s"; "1m", "90s"). Examples:
// "token_bucket:rate=10/s,burst=20", "sliding_window:limit=100,window=1m".
func ParsePolicy(s string) (Policy, error) {
	algName, params, _ := strings.Cut(strings.TrimSpace(s), ":")
	alg, err := limit.ParseAlgorithm(strings.TrimSpace(algName))
	if err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s, err)
	}
	var (
		name            string
		lim, burst, dly int64
		window          limit.Rate
		rate            limit.Rate
		haveLimit       bool
		haveWindow      bool
		haveRate        bool
		mode            = limit.Shape
	)
	if strings.TrimSpace(params) != "" {
		for _, kv := range strings.Split(params, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || v == "" {
				return Policy{}, fmt.Errorf("policy %q: parameter %q: want NAME=VALUE", s, kv)
			}
			switch k {
			case "name":
				name = v
			case "limit":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return Policy{}, fmt.Errorf("policy %q: limit %q is not a whole number", s, v)
				}
				lim, haveLimit = n, true
			case "window", "period":
				d, err := limit.ParsePeriod(v)
				if err != nil {
					return Policy{}, fmt.Errorf("policy %q: %w", s, err)
				}
				window.Period, haveWindow = d, true
			case "rate":
				r, err := limit.ParseRate(v)
				if err != nil {
					return Policy{}, fmt.Errorf("policy %q: %w", s, err)
				}
				rate, haveRate = r, true
			case "burst":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return Policy{}, fmt.Errorf("policy %q: burst %q is not a whole number", s, v)
				}
				burst = n
			case "delay":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return Policy{}, fmt.Errorf("policy %q: delay %q is not a whole number", s, v)
				}
				dly = n
			case "mode":
				switch v {
				case "shape":
					mode = limit.Shape
				case "police", "nodelay":
					mode = limit.Police
				default:
					return Policy{}, fmt.Errorf("policy %q: mode %q: want shape or police", s, v)
				}
			default:
				return Policy{}, fmt.Errorf("policy %q: unknown parameter %q", s, k)
			}
		}
	}
	var p limit.Policy
	switch alg {
	case limit.AlgFixedWindow, limit.AlgSlidingLog, limit.AlgSlidingWindow:
		if haveRate {
			if !haveLimit {
				lim, haveLimit = rate.Count, true
			}
			if !haveWindow {
				window.Period, haveWindow = rate.Period, true
			}
		}
		if !haveLimit || !haveWindow {
			return Policy{}, fmt.Errorf("policy %q: %v needs limit=N and window=PERIOD (or rate=N/PERIOD)", s, alg)
		}
		switch alg {
		case limit.AlgFixedWindow:
			p = limit.FixedWindow{Limit: lim, Window: window.Period}
		case limit.AlgSlidingLog:
			p = limit.SlidingLog{Limit: lim, Window: window.Period}
		default:
			p = limit.SlidingWindow{Limit: lim, Window: window.Period}
		}
	case limit.AlgTokenBucket:
		if !haveRate {
			return Policy{}, fmt.Errorf("policy %q: token_bucket needs rate=N/PERIOD", s)
		}
		p = limit.TokenBucket{Rate: rate, Burst: burst}
	case limit.AlgLeakyBucket:
		if !haveRate {
			return Policy{}, fmt.Errorf("policy %q: leaky_bucket needs rate=N/PERIOD", s)
		}
		p = limit.LeakyBucket{Rate: rate, Burst: burst, Mode: mode, Delay: dly}
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s, err)
	}
	return Policy{Name: name, Policy: p}, nil
}
