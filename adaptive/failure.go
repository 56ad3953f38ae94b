package adaptive

import (
	"context"
	"errors"
	"net"
)

// Failure reasons, the values of the reason label of
// tollgate_adaptive_signal_failures_total.
const (
	ReasonTimeout = "timeout" // the source did not answer in time
	ReasonDown    = "down"    // the source could not be reached or answered non-200
	ReasonGarbage = "garbage" // the answer did not parse, or had no such series
	ReasonAbsent  = "absent"  // exchanges ended without the header field
)

// failureReason classifies a scrape error.
func failureReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.Is(err, ErrNoSeries), errors.Is(err, ErrGarbage):
		return ReasonGarbage
	}
	return ReasonDown
}
