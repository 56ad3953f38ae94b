//go:build !unix

package stableread

import "errors"

func syscallMkfifo(string) error { return errors.New("no named pipes on this platform") }
