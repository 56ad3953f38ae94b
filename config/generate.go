package config

// The operator's reference, docs/configuration.md, is generated from the
// doc comments of this package's and package rules' configuration types.
//go:generate go run ../cmd/confdoc -root .. -o ../docs/configuration.md
