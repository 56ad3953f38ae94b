// Package config is the model of tollgate's one YAML file and its strict
// decoder.
//
// [Load] and [Parse] decode a file into a [Config]: an unknown key, a value
// of the wrong type, a duplicate key or an impossible value (a zero rate, a
// negative burst, an unknown algorithm, a malformed CIDR, a file that cannot
// be read) is an [*Error] carrying file:line:column, and every problem in the
// file is reported at once, joined with errors.Join and sorted by position.
// Defaults are filled after decoding ([Config.Defaults]), so a Config
// returned without error is complete and valid.
//
// The package knows nothing about HTTP stacks or stores: the gateway
// (package gateway) builds its listeners, routes and rule engine from a
// Config. [Default] is the embedded configuration `tollgate serve` runs
// when given no file.
package config
