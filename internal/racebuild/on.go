//go:build race

// Package racebuild says whether the binary was built with the race
// detector, for tests whose figures it distorts: it makes sync.Pool drop
// items at random (allocation counts mean nothing) and slows every
// request several times.
package racebuild

// Enabled is true in a -race build.
const Enabled = true
