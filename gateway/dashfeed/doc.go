// Package dashfeed feeds the gateway's live dashboard (package
// gateway/dashboard): it samples the running snapshot's decision
// counters every admin.dashboard.period, keeps the rate history and the
// rules' heavy hitters, reads the stores' and the adaptive controllers'
// state (Sources), and publishes frames to the dashboard's hub while a
// page is open. The rules.Observer it gives a snapshot (Observer) also
// writes the refusal log.
package dashfeed
