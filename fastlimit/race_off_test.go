//go:build !race

package fastlimit_test

const raceEnabled = false
