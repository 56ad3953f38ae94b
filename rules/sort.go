package rules

import (
	"maps"
	"slices"
)

// sortedKeys returns m's keys in order, so that errors and compiled forms
// do not depend on map iteration order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
