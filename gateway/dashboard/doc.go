// Package dashboard serves the gateway's live dashboard: one page, its
// script and its style sheet, embedded in the binary (nothing is fetched
// from elsewhere: the Content-Security-Policy forbids it), and a stream of
// Server-Sent Events that a Hub fans out to every open page.
//
// The package knows nothing of rules or stores: the gateway publishes
// JSON events (see the event names) and the page draws them. Client keys
// arrive already shown as configured (plain, hashed or truncated); the
// page writes every value as text, never as markup, since keys come from
// clients.
package dashboard
