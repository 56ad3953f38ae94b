// Package adapt is the gateway's wiring of package adaptive: the running
// adaptive controllers (Controllers), prepared for each configuration and
// committed once it serves, so that a reload keeps the ones whose
// settings did not change, with their metrics; and the routes'
// adaptive_concurrency limits (ConcLimits, one gradient controller a
// route, kept across reloads), which bound the requests in flight to an
// upstream. Both report their state to the dashboard (Statuses).
package adapt
