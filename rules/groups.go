package rules

import (
	"context"

	"github.com/tollgate-dev/tollgate/limit"
)

// applyGroups charges reqs (request i is res.at(from+i)) when their rules
// live on several stores. Each store's requests are one ApplyAll, atomic
// on that store; the groups are charged cheapest first (local, eventual,
// the engine's store, strict) and the first refusal or error stops the
// rest, which are then not charged. Groups charged before a refusal stay
// charged: no store can take a charge back. The decision is the Merge of
// the groups charged, its Index the position in reqs of the most
// restrictive policy.
func (e *Engine) applyGroups(ctx context.Context, reqs []limit.Request, res *Result, from int) (limit.Decision, error) {
	sub := e.batches.Get().(*[]limit.Request)
	defer func() {
		clear(*sub)
		*sub = (*sub)[:0]
		e.batches.Put(sub)
	}()
	var out limit.Decision
	charged := false
	for g := range e.groups {
		*sub = (*sub)[:0]
		for i := range reqs {
			if res.at(from+i).rule.group == g {
				*sub = append(*sub, reqs[i])
			}
		}
		var d limit.Decision
		var err error
		st := e.groups[g].store
		switch len(*sub) {
		case 0:
			continue
		case 1:
			r := (*sub)[0]
			d, err = st.Apply(ctx, r.Key, r.Policy, r.Cost)
		default:
			d, err = st.ApplyAll(ctx, *sub)
		}
		if err != nil {
			return out, err
		}
		d.Index = groupIndex(res, from, len(reqs), g, d.Index)
		if charged {
			out = limit.Merge(out, d)
		} else {
			out, charged = d, true
		}
		if !d.Allowed {
			break
		}
	}
	return out, nil
}

// groupIndex maps the index k within group g's requests back to the
// position among all n requests.
func groupIndex(res *Result, from, n, g, k int) int {
	for i := range n {
		if res.at(from+i).rule.group == g {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return 0
}
