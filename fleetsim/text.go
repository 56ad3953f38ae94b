package fleetsim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tollgate-dev/tollgate/replay"
)

// WriteText writes the reports for a terminal, one table per report.
func WriteText(w io.Writer, reps []*Report) error {
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeOne(w, rep); err != nil {
			return err
		}
	}
	return nil
}

func writeOne(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "Fleet of %d nodes, %s routing%s, interval %v, latency %v, loss %g%%; policy %s\n",
		rep.Nodes, rep.Routing, weights(rep.Weights), rep.Interval, rep.Latency, 100*rep.Loss, rep.Policy)
	fmt.Fprintf(w, "  %d requests on %d keys over %.1fs of log; the exact single counter admits %d and refuses %d\n",
		rep.Requests, rep.Keys, rep.Seconds, rep.Exact.Admitted, rep.Exact.Refused)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  tier\tadmitted\trefused\tovershoot\t%\tfalse refusals\t%\tmsgs/node/s\tbytes/node/s\t")
	var notes []string
	for _, t := range rep.Tiers {
		if t.Unsupported != "" {
			notes = append(notes, fmt.Sprintf("  %s: not simulated: %s\n", t.Tier, t.Unsupported))
			continue
		}
		est := ""
		if t.BytesEstimated {
			est = "~"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%.2f\t%d\t%.2f\t%.1f\t%s%.0f\t\n", t.Tier, t.Admitted, t.Refused,
			t.Overshoot, t.OvershootPercent, t.FalseRefusals, t.FalseRefusalPercent,
			t.MessagesPerNodeSecond, est, t.BytesPerNodeSecond)
		if t.Errors > 0 {
			notes = append(notes, fmt.Sprintf("  %s: %d requests the stores failed to decide (a full key table)\n", t.Tier, t.Errors))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range rep.Tiers {
		if len(t.WorstKeys) > 0 {
			k := t.WorstKeys[0]
			fmt.Fprintf(w, "  %s, worst key %s: %d requests, %d admitted beyond the limit, %d refused wrongly\n",
				t.Tier, replay.TerminalSafe(k.Key), k.Requests, k.Overshoot, k.FalseRefusals)
		}
	}
	for _, n := range notes {
		fmt.Fprint(w, n)
	}
	fmt.Fprintln(w, "  (~: Redis traffic estimated from the script calls' sizes; gossip bytes are the encoded messages, without UDP/IP headers)")
	return nil
}

func weights(ws []float64) string {
	if len(ws) == 0 {
		return ""
	}
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = fmt.Sprint(w)
	}
	return " (node weights " + strings.Join(s, ":") + ")"
}
