package rules

import "context"

// AnswerHeader is the view of a response's header fields that
// Result.Charge reads (a counting rule's Count.Header). Names are passed
// in canonical form.
type AnswerHeader interface {
	// Header returns the field's first value and whether it is present.
	Header(name string) (string, bool)
}

// Counts reports whether a rule that matched the request charges on the
// answer (Rule.Count): the front end must then call Charge once the
// upstream has answered (or failed to).
func (r *Result) Counts() bool { return false }

// Charge charges the counting rules (Rule.Count) that matched the request
// of r, when the answer (its status and header fields; h may be nil) is
// one they count. Call it once, after the upstream's answer, and only for
// a request r admitted; status 0 means no answer came (the upstream
// failed or the client went away) and is charged only by a rule that
// counts 502.
func (r *Result) Charge(ctx context.Context, status int, h AnswerHeader) error {
	return nil
}
