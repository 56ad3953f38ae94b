// Package exchange holds the types both of the gateway's data paths
// share, and nothing that serves: the Snapshot one configuration serves
// with (rule engine, routes most specific first, certificate, client
// address settings; immutable, swapped whole on reload) and its Routes;
// the Core the data paths and the lifecycle share (the snapshot pointer,
// metrics, logs, in-flight count, tracked connections); the adaptive
// meters of an exchange with the upstream; and the answers both paths
// give alike (a client's broken body, the slow head, the client-share
// refusal, X-Forwarded-For's and Forwarded's values). The gateway
// builds the snapshot; packages fastpath and h2path serve it.
package exchange
