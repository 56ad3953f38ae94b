package rules

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is what every configuration problem matches with
// errors.Is.
var ErrInvalidConfig = errors.New("invalid rules config")

// FieldError is one configuration problem, at the path of the field in
// configuration names ("rules[2].policies[0].rate", "client_ip.header"),
// so a YAML layer can map it to file:line. Its message is "PATH: problem".
type FieldError struct {
	Path string
	Err  error
}

// Error returns "PATH: problem".
func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying problem (e.g. a limit.ErrInvalidRate).
func (e *FieldError) Unwrap() error { return e.Err }

// Is reports that every FieldError is an ErrInvalidConfig.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidConfig }

// problems collects FieldErrors.
type problems []error

// add records a problem at path; format may use %w.
func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, &FieldError{Path: path, Err: fmt.Errorf(format, args...)})
}
