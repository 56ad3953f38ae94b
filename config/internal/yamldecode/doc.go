// Package yamldecode is config's strict YAML machinery: a Decoder that
// fills tagged Go structs from a YAML node tree (every unknown key, wrong
// type, duplicate key and syntax error reported at its file:line:col, all
// at once), the positions and errors it reports (Pos, Error, List,
// Problems), and the placing of a YAML syntax error at the line at fault.
// Package config re-exports Pos, Error and Problems; nothing else imports
// it.
package yamldecode
