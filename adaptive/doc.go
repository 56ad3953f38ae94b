// Package adaptive scales rate limits with the health of the origin they
// protect: a controller watches a few health signals (latency quantiles,
// error rate, in-flight requests, a value the origin reports) and moves a
// factor between a floor and the base (1000 permille, the policy as
// configured), which the rule engine multiplies into every policy that
// names the controller.
//
// # The controller's arithmetic
//
// Every interval the controller reads each signal i: its value v_i, its
// threshold T_i (> 0) and its weight w_i (> 0). The signal's breach is
//
//	b_i = clamp((v_i - T_i) / T_i, 0, 1)
//
// zero at or below the threshold, one at twice the threshold or above.
// The breach score is the weighted mean
//
//	S = Σ w_i·b_i / Σ w_i        (0 ≤ S ≤ 1)
//
// Then, with the factor F in permille (floor ≤ F ≤ 1000):
//
//   - S > 0 (some signal above its threshold): multiplicative decrease in
//     proportion to the score, F ← max(floor, ⌊F·K/10⁶⌋ with K = round((1 − Decrease·S)·10⁶)), and
//     the healthy run is reset. Decrease (0 < Decrease ≤ 1, default 0.5)
//     is the cut at a full breach.
//   - every signal at or below (1 − Hysteresis)·T_i: the interval is
//     healthy; after RecoverAfter healthy intervals in a row, additive
//     recovery, F ← min(1000, F + Recovery·k), k the intervals elapsed
//     since the last step (at most 10, so a stalled ticker does not jump).
//   - otherwise (a signal between (1 − Hysteresis)·T_i and T_i): the
//     dead band, F is held. The band keeps the factor from oscillating
//     around the threshold.
//
// A signal whose source failed this interval (down, slow, garbage) is
// missing. With OnMissing Hold (the default) it counts as neither breach
// nor health: it adds nothing to S, and while one is missing the
// controller does not recover. With OnMissing Tighten it counts as a full
// breach (b_i = 1). Either way F never leaves [floor, 1000], whatever the
// readings (NaN and infinities are missing readings).
//
// The arithmetic is a pure function of the readings and the time
// (Controller.Step); the clocks, the sources and the sharing of the
// factor between gateways (Fleet: a Redis hash, or a gossip Board
// through BoardFleet; each node publishes its factor every interval and
// applies the lowest one published in the last three) stay at the edge.
//
// A Factor is the published value: one atomic integer read by the rule
// engine at decision time, so that the scaled limit costs no allocation.
//
// Gradient is a second, separate kind of controller: a concurrency limit
// for one upstream moved by the ratio of its minimum to its current
// latency, as Envoy's adaptive_concurrency filter (its type's
// documentation gives the formula).
package adaptive
