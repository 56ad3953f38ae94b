package rules

// CountingRule returns the name of the first rule that counts on the
// answer (Rule.Count), if any: a front end that never sees the answer
// (forward-auth) refuses such an engine, as it refuses one with a
// concurrency policy (ConcurrencyRule).
func (e *Engine) CountingRule() (string, bool) {
	for _, rs := range [][]*compiledRule{e.enforced, e.shadow} {
		for _, r := range rs {
			if r.count != nil {
				return r.name, true
			}
		}
	}
	return "", false
}
