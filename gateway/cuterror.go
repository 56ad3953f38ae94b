package gateway

import "fmt"

// CutError is Shutdown's error when its context ended while requests
// were still being served. They are abandoned: they end when the process
// does, which cuts them.
type CutError struct {
	// Requests is how many requests were still being served.
	Requests int64
	// Err is the context's error.
	Err error
}

// Error says how many requests were cut and why.
func (e *CutError) Error() string {
	return fmt.Sprintf("%d requests still running were cut: %v", e.Requests, e.Err)
}

// Unwrap returns the context's error.
func (e *CutError) Unwrap() error { return e.Err }
