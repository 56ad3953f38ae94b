package rules

import (
	"context"
	"errors"

	"github.com/tollgate-dev/tollgate/limit"
)

// Engine is a compiled, immutable rule set over a store. It is safe for
// concurrent use; replace the whole Engine to change rules.
type Engine struct {
	store      limit.Store
	failClosed bool
}

type compiledRule struct{}

type compiledPolicy struct{}

// ErrInvalidConfig wraps every problem Config.Validate reports.
var ErrInvalidConfig = errors.New("invalid rules config")

// New validates cfg and compiles it into an Engine that charges store.
// The Engine keeps no reference to cfg's slices or maps.
func New(cfg Config, store limit.Store) (*Engine, error) {
	return nil, errors.New("rules: not implemented yet")
}

// Decide applies every rule matching req and returns the result. It does
// not allocate for an allowed request keyed by IP. The error is the
// store's, wrapped; the Result is still usable then (Outcome Errored,
// allowed or refused as Config.OnStoreError says).
func (e *Engine) Decide(ctx context.Context, req Request) (Result, error) {
	return Result{}, errors.New("rules: not implemented yet")
}
