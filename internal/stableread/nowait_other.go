//go:build !unix

package stableread

// openNoWait is no flag on this platform.
const openNoWait = 0
