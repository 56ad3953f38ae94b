package rules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrPolicySpec reports a one-line policy that cannot be read (see
// ParsePolicySpec).
var ErrPolicySpec = errors.New("malformed policy")

// ParsePolicySpec reads a policy written on one line, as tollgate replay's
// -policy flag takes it:
//
//	ALGORITHM:KEY=VALUE,KEY=VALUE,...
//
// with the keys a policy has in the gateway's file: name, rate, burst,
// limit, window, mode and delay ("token_bucket:rate=10/s,burst=20",
// "sliding_window:limit=100,window=1m"). An empty ALGORITHM means
// token_bucket, as in the file. It reads the words only; Policy.ToLimit
// judges them, exactly as it judges the file's, so the simulator and the
// gateway accept the same policies. An error wraps ErrPolicySpec.
func ParsePolicySpec(s string) (Policy, error) {
	alg, params, _ := strings.Cut(strings.TrimSpace(s), ":")
	p := Policy{Algorithm: strings.TrimSpace(alg)}
	if strings.TrimSpace(params) == "" {
		return p, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Policy{}, fmt.Errorf("%w: parameter %q: want KEY=VALUE", ErrPolicySpec, kv)
		}
		if seen[k] {
			return Policy{}, fmt.Errorf("%w: %s given twice", ErrPolicySpec, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "name":
			if !validName(v) {
				return Policy{}, fmt.Errorf("%w: name %q: %s", ErrPolicySpec, v, nameRule)
			}
			p.Name = v
		case "rate":
			p.Rate = v
		case "window":
			p.Window = v
		case "mode":
			p.Mode = v
		case "limit":
			p.Limit, err = wholeNumber(k, v)
		case "burst":
			p.Burst, err = wholeNumber(k, v)
		case "delay":
			p.Delay, err = wholeNumber(k, v)
		default:
			return Policy{}, fmt.Errorf("%w: unknown key %q (want name, rate, burst, limit, window, mode or delay)", ErrPolicySpec, k)
		}
		if err != nil {
			return Policy{}, err
		}
	}
	return p, nil
}

func wholeNumber(k, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not a whole number", ErrPolicySpec, k, v)
	}
	return n, nil
}
