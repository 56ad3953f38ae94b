// Package logtest holds what the tests of several packages need to read
// what was logged.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log sink safe for concurrent writers (a logger's goroutines,
// a process's output): Write appends, String returns all written so far.
// The zero Buffer is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
