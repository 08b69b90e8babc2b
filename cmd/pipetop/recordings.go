package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/colorprofile"

	"github.com/pipetop/pipetop/export/flame"
	runreport "github.com/pipetop/pipetop/export/report"
	"github.com/pipetop/pipetop/export/trace"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/replay"
	"github.com/pipetop/pipetop/monitor/sources"
	"github.com/pipetop/pipetop/monitor/summary"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/styles"
)

// runCommands are the commands about recordings; each parses its own flags.
var runCommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"record":  record,
	"replay":  replayCmd,
	"summary": summaryCmd,
	"compare": compareCmd,
	"trace":   traceCmd,
	"flame":   flameCmd,
	"report":  reportCmd,
}

// flags returns a flag set for a recordings command that prints usage to
// stderr.
func flags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("pipetop "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pipetop %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags wherever they stand among the positional
// arguments and checks their count.
func parseArgs(fs *flag.FlagSet, args []string, lo, hi int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) < lo || len(pos) > hi {
		fs.Usage()
		return nil, usageError{fmt.Errorf("%s: want %d to %d arguments, got %d", fs.Name(), lo, hi, len(pos))}
	}
	return pos, nil
}

// record implements pipetop record: attach like pipetop attach and write
// everything to a recording until interrupted (or --duration).
func record(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flags("record", "[-o FILE] [flags] [PATH|PID|NAME]", stderr)
	out := fs.String("o", "", "the recording `file` (default pipetop-NAME-TIME.pipetop)")
	interval := fs.Duration("interval", time.Second, "how often host and GPU readings are recorded")
	duration := fs.Duration("duration", 0, "stop after this long (default: until interrupted)")
	noGPU := fs.Bool("no-gpu", false, "do not load NVML")
	pos, err := parseArgs(fs, args, 0, 1)
	if err != nil {
		return err
	}
	if *interval < 50*time.Millisecond {
		return usageError{fmt.Errorf("--interval %v: want at least 50ms", *interval)}
	}
	spec := strings.Join(pos, "")
	m, err := monitor.Open(ctx, spec, monitor.Options{Sources: sources.Registered(*noGPU)})
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Pick {
		return severalTrainers("record")
	}
	path := *out
	if path == "" {
		path = defaultRecording(spec, time.Now())
	}
	host, _ := os.Hostname()
	w, err := recording.Create(path, recording.Header{StartNs: time.Now().UnixNano(), Host: host, Source: spec})
	if err != nil {
		return err
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	fmt.Fprintf(stderr, "pipetop: recording to %s (Ctrl-C to stop)\n", path)
	err = m.Record(ctx, w, *interval)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// defaultRecording names a recording after the trainer and the time.
func defaultRecording(spec string, now time.Time) string {
	name := "trainer"
	if spec != "" && !strings.Contains(spec, "/") {
		name = spec
	}
	return fmt.Sprintf("pipetop-%s-%s.pipetop", name, now.Format("20060102-150405"))
}

// wholeRun is what replay --once/--json show without --at.
const wholeRun = "the whole run (its end, all steps; --at D: one instant)"

// replayCmd implements pipetop replay. Without --at, --once and --json show
// the whole run (its end, over window all unless --window says otherwise);
// the interactive replay starts at the beginning and plays.
func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("replay", "FILE [--at D] [--once|--json] [flags]", stderr)
	at := fs.Duration("at", 0, "start at this position in the recording (e.g. 1m30s; negative: from the end);\n"+
		"default: --once/--json show the whole run (its end, window all), the interactive replay starts at the beginning")
	once := fs.Bool("once", false, "print the text snapshot (of the whole run, or at --at) and exit")
	asJSON := fs.Bool("json", false, "print the JSON snapshot (of the whole run, or at --at) and exit")
	speed := fs.Int("speed", 1, "play at this speed: 1, 2, 4, ... 64")
	window := fs.String("window", "5s", "summary window: 5s, 30s, 2m or all (--once/--json without --at: all)")
	width := fs.Int("width", 0, "width of the --once text (default: the terminal's, else 100)")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	whole := (*once || *asJSON) && !set["at"]
	if whole && !set["window"] {
		*window = "all"
	}
	wi, ok := monitor.WindowByLabel(*window)
	if !ok {
		return usageError{fmt.Errorf("--window %q: want 5s, 30s, 2m or all", *window)}
	}
	si, err := speedIndex(*speed)
	if err != nil {
		return err
	}
	p, err := replay.Load(pos[0])
	if err != nil {
		return err
	}
	if p.Damage != nil {
		fmt.Fprintf(stderr, "pipetop: %v; replaying up to there\n", p.Damage)
	}
	p.SetSpeed(si)
	start := p.Start().Add(*at)
	if *at < 0 || whole {
		start = p.End().Add(*at)
	}
	if whole {
		p.SetView(wholeRun)
	}
	if *once || *asJSON {
		p.SetPaused(true)
		p.SeekTo(start)
		s := p.Snapshot(monitor.Windows[wi])
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}
		return printText(stdout, &s, config{width: *width})
	}
	p.SeekTo(start)
	prof := colorprofile.Detect(os.Stdout, os.Environ())
	root := tui.New(tui.Options{Snapshotter: p.Snapshotter(), Styles: styles.New(prof >= colorprofile.ANSI),
		Window: wi, Context: ctx, Now: p.Now, Replay: p})
	return fullScreen(ctx, root, prof)
}

// speedIndex is the index of speed in replay.Speeds.
func speedIndex(speed int) (int, error) {
	for i, s := range replay.Speeds {
		if float64(speed) == s {
			return i, nil
		}
	}
	return 0, usageError{fmt.Errorf("--speed %d: want one of %v", speed, replay.Speeds)}
}

// summaryCmd implements pipetop summary.
func summaryCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("summary", "FILE [--json]", stderr)
	asJSON := fs.Bool("json", false, "print the summary as JSON (what pipetop compare reads)")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	r, err := summary.FromFile(pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return summary.WriteText(stdout, r)
}

// compareCmd implements pipetop compare.
func compareCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("compare", "A B [--json] [--fail-if-slower PCT]   (recordings or summary JSON files)", stderr)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	failPct := fs.Float64("fail-if-slower", -1, "exit with status 4 when B's step time is more than `PCT` % longer than A's,\n"+
		"or its samples/s (steps/s) more than PCT % lower, beyond the runs' noise; one line says what regressed")
	pos, err := parseArgs(fs, args, 2, 2)
	if err != nil {
		return err
	}
	gate := false
	fs.Visit(func(f *flag.Flag) { gate = gate || f.Name == "fail-if-slower" })
	if gate && (*failPct < 0 || math.IsNaN(*failPct)) {
		return usageError{fmt.Errorf("--fail-if-slower %g: want a percentage of at least 0", *failPct)}
	}
	a, err := summary.Load(pos[0])
	if err != nil {
		return err
	}
	b, err := summary.Load(pos[1])
	if err != nil {
		return err
	}
	c := summary.Compare(a, b)
	var g summary.Gate
	if gate {
		g = c.Judge(*failPct)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = summary.WriteComparison(stdout, a, b, c)
	}
	if err != nil {
		return fmt.Errorf("compare: write: %w", err)
	}
	if !gate {
		return nil
	}
	if !*asJSON {
		fmt.Fprintln(stdout, g.Line)
	}
	if g.Regressed {
		return regression{errors.New(g.Line)}
	}
	return nil
}

// reportCmd implements pipetop report: a run as one self-contained HTML
// page with plots.
func reportCmd(_ context.Context, args []string, _, stderr io.Writer) error {
	fs := flags("report", "FILE [-o report.html]   (a recording, or a summary JSON file)", stderr)
	out := fs.String("o", "", "the HTML `file` to write (default: FILE's name with .html)")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	r, err := runreport.FromFile(pos[0])
	if err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = strings.TrimSuffix(pos[0], filepath.Ext(pos[0])) + ".html"
	}
	if r.Run.Damage != "" {
		fmt.Fprintf(stderr, "pipetop: %s; reporting up to there\n", r.Run.Damage)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := runreport.Write(f, r); err != nil {
		f.Close()
		return fmt.Errorf("report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	fmt.Fprintf(stderr, "pipetop: wrote %s\n", path)
	return nil
}

// traceCmd implements pipetop trace.
func traceCmd(_ context.Context, args []string, _, stderr io.Writer) error {
	fs := flags("trace", "FILE -o trace.json", stderr)
	out := fs.String("o", "", "the trace-event JSON `file` to write (opens in Perfetto's UI)")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError{errors.New("trace needs -o FILE")}
	}
	_, es, err := recording.ReadAll(pos[0])
	if es == nil && err != nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "pipetop: %v; tracing up to there\n", err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if err := trace.Write(f, es); err != nil {
		f.Close()
		return fmt.Errorf("write trace %s: %w", *out, err)
	}
	return f.Close()
}

// flameCmd implements pipetop flame: the stack samples of a recording (or
// of a run summary) as speedscope JSON or folded stacks.
func flameCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("flame", "FILE [-o out.json] [--folded]   (a recording or a pipetop-summary-*.json)", stderr)
	out := fs.String("o", "", "write to this `file` (default: standard output)")
	folded := fs.Bool("folded", false, "write folded stacks (flamegraph.pl, inferno) instead of speedscope JSON")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	samples, err := stackSamples(pos[0], stderr)
	if err != nil {
		return err
	}
	if len(samples) == 0 {
		return fmt.Errorf("flame: %s holds no stack samples (they come from Python runs under pipetop run, with PIPETOP_STACKS_HZ above 0)", pos[0])
	}
	w := stdout
	var f *os.File
	if *out != "" {
		if f, err = os.Create(*out); err != nil {
			return fmt.Errorf("flame: %w", err)
		}
		w = f
	}
	if *folded {
		err = flame.WriteFolded(w, samples)
	} else {
		err = flame.WriteSpeedscope(w, filepath.Base(pos[0]), samples)
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("flame %s: %w", pos[0], err)
	}
	return nil
}

// stackSamples reads the stacks frames of a recording, by rank, or the
// whole-run samples of a run summary.
func stackSamples(path string, stderr io.Writer) ([]flame.Samples, error) {
	if s, ok, err := summaryStacks(path); ok || err != nil {
		return s, err
	}
	_, es, err := recording.ReadAll(path)
	if es == nil && err != nil {
		return nil, err
	}
	if err != nil {
		fmt.Fprintf(stderr, "pipetop: %v; using the samples up to there\n", err)
	}
	var out []flame.Samples
	at := map[int]int{} // rank (-1: none) -> index in out
	for _, e := range es {
		if e.Frame == nil || e.Frame.Type != ipc.TypeStacks || e.Frame.Stacks == nil {
			continue
		}
		r := -1
		if e.Rank != nil {
			r = *e.Rank
		}
		i, ok := at[r]
		if !ok {
			i = len(out)
			at[r] = i
			out = append(out, flame.Samples{Rank: e.Rank})
		}
		out[i].Frames = append(out[i].Frames, e.Frame.Stacks)
	}
	return out, nil
}

// summaryStacks reads the samples of a run summary; ok is false for a file
// that is not one (a recording).
func summaryStacks(path string) (s []flame.Samples, ok bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("flame: %w", err)
	}
	var doc scriptSummary
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &doc) != nil || doc.Schema != summarySchema {
		return nil, false, nil
	}
	if doc.Stacks == nil {
		return nil, true, nil
	}
	if err := doc.Stacks.Validate(); err != nil {
		return nil, true, fmt.Errorf("flame: run summary %s: %w", path, err)
	}
	return []flame.Samples{{Frames: []*stage.StackSamples{doc.Stacks}}}, true, nil
}
