// Package local is the local consistency tier's static division: each node
// counts alone, in its own in-memory store, with the limit divided by the
// node count, so that N nodes together admit about the global limit
// without talking to each other (the seed documents' "static division").
//
// It is exact only when traffic is spread evenly over the nodes: a client
// whose requests all reach one node gets 1/N of its limit. Divide rounds
// down, so the nodes together never admit more than the limit, except that
// no limit is divided below one.
package local
