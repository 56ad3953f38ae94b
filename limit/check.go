package limit

import "fmt"

// Check is the check a store makes of the policy it is handed: an error
// wrapping ErrInvalidPolicy for a nil policy (where calling Validate
// would panic), else p.Validate()'s. A store that takes only some
// algorithms checks those after.
func Check(p Policy) error {
	if p == nil {
		return fmt.Errorf("%w: nil policy", ErrInvalidPolicy)
	}
	return p.Validate()
}
