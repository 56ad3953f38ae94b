package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/replay"
	"github.com/tollgate-dev/tollgate/rules"
)

// replayCommand is `tollgate replay`: what would these limits have done
// to the traffic in this access log?
var replayCommand = &command{
	Name:  "replay",
	Args:  "[FILE]",
	Short: "replay an access log (FILE or standard input; gzip detected) against policies and report what they would have refused",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		o := registerReplayFlags(fs)
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) > 1 {
				fmt.Fprintf(stderr, "tollgate replay: one input file at a time (got %d)\n", len(args))
				return exitUsage
			}
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			if err := runReplay(ctx, o, file, os.Stdin, stdout, stderr); err != nil {
				// Package replay's errors start with its name, which the
				// prefix already says; the message may quote the input.
				msg := strings.TrimPrefix(err.Error(), "replay: ")
				fmt.Fprintf(stderr, "tollgate replay: %s\n", replay.TerminalSafe(msg))
				if errors.As(err, new(replayUsageError)) {
					return exitUsage
				}
				return exitFail
			}
			return exitOK
		}
	},
}

// replayUsageError marks a command line that cannot work (exit code 2).
type replayUsageError struct{ error }

func (e replayUsageError) Unwrap() error { return e.error }

func badReplayUsage(err error) error { return replayUsageError{err} }

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// replayOptions are the parsed flags of `tollgate replay`.
type replayOptions struct {
	policies, fields, paths, methods, statuses multiFlag

	format, key, jsonOut, htmlOut, progress, configFile               string
	v6, v4, suggestTop, top, busiest, examples, maxKeys, reorderLines int
	reorder                                                           time.Duration
	suggest                                                           bool
	suggestPct                                                        float64
	fleet                                                             fleetOptions
}

func registerReplayFlags(fs *flag.FlagSet) *replayOptions {
	o := &replayOptions{}
	fs.Var(&o.policies, "policy", "a `policy` to simulate (repeatable): fixed_window|sliding_log|sliding_window:limit=N,window=PERIOD; token_bucket:rate=N/PERIOD,burst=N; leaky_bucket:rate=N/PERIOD,burst=N,mode=shape|police,delay=N; each may add name=LABEL")
	fs.StringVar(&o.configFile, "config", "", "also simulate the rules of a gateway configuration `file`, as the gateway runs them")
	fs.StringVar(&o.format, "format", "auto", "log `format`: auto, combined, common, json or csv")
	fs.Var(&o.fields, "field", "JSON field or CSV column of a part, `PART=NAME[|NAME...]` (repeatable); parts: time, addr, user, method, path, status, key, cost, host")
	fs.StringVar(&o.key, "key", "ip", "rate-limit `key`: ip, user, method, path, status, host, key, field:NAME, all, or a composite such as ip,path")
	fs.IntVar(&o.v6, "ipv6-prefix", rules.DefaultIPv6Prefix, "aggregate IPv6 client addresses to this prefix `length` (128 keeps whole addresses)")
	fs.IntVar(&o.v4, "ipv4-prefix", 32, "aggregate IPv4 client addresses to this prefix `length`")
	fs.Var(&o.paths, "path-prefix", "only requests whose path starts with `prefix` (repeatable)")
	fs.Var(&o.methods, "method", "only requests with this `method` (repeatable)")
	fs.Var(&o.statuses, "status", "only requests with this `status`, digits or x such as 5xx (repeatable)")
	fs.DurationVar(&o.reorder, "reorder", replay.DefaultReorder, "reordering `window` for out-of-order lines (0 disables)")
	fs.IntVar(&o.reorderLines, "reorder-lines", replay.DefaultReorderLines, "the most `lines` the reordering window holds (bounds its memory; beyond it, the earliest line is simulated early)")
	fs.BoolVar(&o.suggest, "suggest", false, "suggest per policy the smallest limit (or burst) refusing none of the busiest keys")
	fs.IntVar(&o.suggestTop, "suggest-top", 10, "with -suggest: how many of the busiest `keys` must never be refused")
	fs.Float64Var(&o.suggestPct, "suggest-percentile", 99, "with -suggest: the `percent` of keys that must never be refused")
	fs.IntVar(&o.top, "top", 10, "how many `keys` to list per policy")
	fs.IntVar(&o.busiest, "busiest", 5, "with -html: how many of the busiest keys get their own timeline")
	fs.StringVar(&o.jsonOut, "json", "", "write the report as JSON to `file` (\"-\": standard output, instead of the text report)")
	fs.StringVar(&o.htmlOut, "html", "", "write a self-contained HTML report with charts to `file`")
	fs.IntVar(&o.maxKeys, "max-keys", 0, "bound the key records held to about this `number`, retiring idle keys (0: no bound, every per-key figure exact)")
	fs.IntVar(&o.examples, "show-malformed", 5, "how many malformed lines to show")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on standard error: auto (only when it is a terminal), always or never")
	registerFleetFlags(fs, &o.fleet)
	return o
}

// runReplay runs `tollgate replay` on file ("" or "-" reads stdin). The
// report goes to stdout (or to the -json/-html files); diagnostics and
// the progress bar go to stderr.
func runReplay(ctx context.Context, o *replayOptions, file string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg := replay.Config{
		Reorder: o.reorder, ReorderLines: o.reorderLines, Suggest: o.suggest, SuggestTop: o.suggestTop,
		SuggestPercentile: o.suggestPct, Top: o.top, Examples: o.examples, MaxKeys: o.maxKeys,
		Filter: replay.Filter{PathPrefixes: o.paths, Methods: o.methods, Statuses: o.statuses},
	}
	if o.reorder == 0 {
		cfg.Reorder = -1
	}
	var err error
	if cfg.Format, err = accesslog.ParseFormat(o.format); err != nil {
		return badReplayUsage(err)
	}
	for _, f := range o.fields {
		if err := cfg.Fields.SetField(f); err != nil {
			return badReplayUsage(err)
		}
	}
	if cfg.Key, err = replay.ParseKeySpec(o.key); err != nil {
		return badReplayUsage(err)
	}
	cfg.Key.IPv6Prefix, cfg.Key.IPv4Prefix = o.v6, o.v4
	for _, s := range o.policies {
		p, err := replay.ParsePolicy(s)
		if err != nil {
			return badReplayUsage(err)
		}
		cfg.Policies = append(cfg.Policies, p)
	}
	if o.configFile != "" {
		c, err := config.Load(o.configFile)
		if err != nil {
			return err
		}
		rc, err := c.EngineConfig()
		if err != nil {
			return err
		}
		cfg.Rules = &replay.Rules{Name: "rules of " + o.configFile, Config: rc}
	}
	if len(cfg.Policies) == 0 && cfg.Rules == nil {
		return badReplayUsage(errors.New("give at least one -policy or a -config file; see tollgate replay -h"))
	}
	switch o.progress {
	case "auto", "always", "never":
	default:
		return badReplayUsage(fmt.Errorf("-progress %q: want auto, always or never", o.progress))
	}

	fleet, err := o.fleet.start(cfg.Policies)
	if err != nil {
		return err
	}
	if fleet != nil {
		defer fleet.close()
		cfg.Tap = fleet.tap
	}
	in, cleanup, err := openReplayInput(file, stdin, o.htmlOut != "")
	if err != nil {
		return err
	}
	defer cleanup()

	showBar := o.progress == "always" || (o.progress == "auto" && isTerminal(stderr))
	rep, err := replayOnce(ctx, in, cfg, showBar, stderr)
	if err != nil {
		return err
	}
	if o.htmlOut != "" && o.busiest > 0 && len(rep.Busiest) > 0 {
		// A second pass records the busiest keys' own timelines: which keys
		// are busiest is known only at the end of the first.
		for _, k := range rep.Busiest[:min(o.busiest, len(rep.Busiest))] {
			cfg.Track = append(cfg.Track, k.Key)
		}
		cfg.Tap = nil // the fleets saw the first pass
		if rep, err = replayOnce(ctx, in, cfg, showBar, stderr); err != nil {
			return err
		}
	}

	if fleet != nil {
		sec, err := fleet.section()
		if err != nil {
			return err
		}
		rep.Sections = append(rep.Sections, sec)
	}
	textTo := stdout
	if o.jsonOut != "" {
		if o.jsonOut == "-" {
			textTo = nil
			err = replay.WriteJSON(stdout, rep)
		} else {
			err = writeFile(o.jsonOut, func(w io.Writer) error { return replay.WriteJSON(w, rep) })
		}
		if err != nil {
			return err
		}
	}
	if o.htmlOut != "" {
		if err := writeFile(o.htmlOut, func(w io.Writer) error { return replay.WriteHTML(w, rep) }); err != nil {
			return err
		}
	}
	if textTo != nil {
		if err := replay.WriteText(textTo, rep); err != nil {
			return err
		}
	}
	return nothingSimulated(&rep.Input)
}

// nothingSimulated says why no request was simulated, or returns nil when
// some were: a run that simulated nothing has answered nothing, and
// exits non-zero.
func nothingSimulated(in *replay.InputStats) error {
	if in.Simulated > 0 {
		return nil
	}
	content := in.Lines - in.Blank - in.Header
	switch {
	case content == 0:
		return errors.New("nothing was simulated: the input has no log lines")
	case in.Binary > 0 && in.Binary == in.Malformed && in.Malformed == content:
		return fmt.Errorf("nothing was simulated: the input is not a text log (NUL bytes in %d lines); give a log, plain or gzipped", in.Binary)
	case len(in.FieldsSeen) > 0:
		return fmt.Errorf("nothing was simulated: no timestamp field among %s; name it with -field time=NAME (looked for %s)",
			strings.Join(in.FieldsSeen, ", "), strings.Join(in.TimeFields, ", "))
	case in.Malformed == content:
		return fmt.Errorf("nothing was simulated: all %d lines are malformed for the %s format (see the first ones in the report; -format sets the format)", in.Malformed, in.Format)
	case in.Filtered > 0:
		return fmt.Errorf("nothing was simulated: the filters left none of %d requests", in.Filtered)
	}
	return fmt.Errorf("nothing was simulated: %d lines, %d malformed", in.Lines, in.Malformed)
}

// replayInput is a replay's input: it can be read again from the start
// when it is a file (the HTML report reads it twice).
type replayInput struct {
	path  string    // "" for a stream read once
	r     io.Reader // the stream, when path is ""
	size  int64     // bytes, or -1 when unknown
	reads int
}

// openReplayInput opens name ("" or "-" is stdin). When the input must be
// read twice and is standard input, it is spooled to a temporary file.
func openReplayInput(name string, stdin io.Reader, twice bool) (*replayInput, func(), error) {
	nothing := func() {}
	if name != "" && name != "-" {
		st, err := os.Stat(name)
		if err != nil {
			return nil, nothing, err
		}
		if st.Mode().IsRegular() {
			return &replayInput{path: name, size: st.Size()}, nothing, nil
		}
		f, err := os.Open(name) // a pipe or device: read it as a stream
		if err != nil {
			return nil, nothing, err
		}
		stdin = f
		nothing = func() { f.Close() }
	}
	if !twice {
		return &replayInput{r: stdin, size: -1}, nothing, nil
	}
	tmp, err := os.CreateTemp("", "tollgate-replay-*.log")
	if err != nil {
		return nil, nothing, fmt.Errorf("spooling standard input: %w", err)
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()); nothing() }
	n, err := io.Copy(tmp, stdin)
	if err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("spooling standard input: %w", err)
	}
	return &replayInput{path: tmp.Name(), size: n}, cleanup, nil
}

// replayOnce runs one pass over in, with a progress bar when asked.
func replayOnce(ctx context.Context, in *replayInput, cfg replay.Config, showBar bool, stderr io.Writer) (*replay.Report, error) {
	r := in.r
	if in.path != "" {
		f, err := os.Open(in.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	} else if in.reads > 0 {
		return nil, errors.New("the input stream was already read")
	}
	in.reads++
	if showBar {
		desc := "replaying"
		if in.reads > 1 {
			desc = "timelines"
		}
		bar := progressbar.NewOptions64(in.size,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetRenderBlankState(true),
		)
		cfg.Progress = func(n int64) { _ = bar.Set64(n) }
		defer bar.Finish()
	}
	return replay.Run(ctx, r, cfg)
}

// writeFile writes a report file through fn, reporting close errors.
func writeFile(name string, fn func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
