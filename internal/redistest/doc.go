// Package redistest starts real redis-server processes for tests: a
// standalone server on a free 127.0.0.1 port in a temporary directory, or a
// three-master Redis Cluster, each stopped at t.Cleanup.
//
// Tests that need Redis call Start (or StartCluster); when the redis-server
// binary is missing they fail, since .ci/run installs it.
package redistest
