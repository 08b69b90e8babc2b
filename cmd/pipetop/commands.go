package main

import (
	"context"
	"embed"
	"io"

	"github.com/pipetop/pipetop/internal/cli"
)

// runFunc runs a command on the arguments left once its flags are parsed.
type runFunc = cli.Func

// usageError is err as a bad command line: pipetop exits with status 2.
func usageError(err error) error { return cli.Usage(err) }

// commands is the command table, in the order pipetop -h lists it. The
// view has two rows (its two usage lines); the first is the one run.
func commands() []cli.Command {
	return []cli.Command{
		{Usage: "[flags]", NArgs: [2]int{0, -1}, Whole: true, Flags: viewFlags("", showView),
			About: "attach to the only live trainer, pick one of several,\nor monitor GPU/CPU until a trainer appears"},
		{Name: "attach", Usage: "PATH|PID|NAME|RUN [flags]", NArgs: [2]int{0, -1}, Whole: true, Flags: viewFlags("attach", showView),
			About: "attach to the given trainer; a rank of a\nmulti-process run attaches every rank of the run;\na Python PID without a trainer: its stacks' hot code"},
		{Name: "ls", Usage: "[--json]", NArgs: [2]int{0, -1}, Whole: true, Flags: viewFlags("ls", showList),
			About: "list live trainers, the ranks of each run together"},
		{Usage: "--prometheus URL [RUN] [--rank R] [--once|--json]", NArgs: [2]int{0, -1}, Whole: true, Flags: viewFlags("", showView),
			About: "every rank of a run on every host, read from the\nPrometheus server that scrapes each host's pipetop\nexport (the only run there when RUN is not given)"},
		{Name: "run", Usage: "[--name N] [--no-tui] [--json] [--record FILE] [--apply FILE] [--cpuprofile FILE] -- CMD ARGS...", Raw: true, Flags: runFlags, Long: help("run"),
			About: "run a PyTorch script with automatic instrumentation\n(see pipetop run -h)"},
		{Name: "bisect", Usage: "[flags] [--json] [--record DIR] -- CMD ARGS...", Raw: true, Flags: bisectFlags, Long: help("bisect"),
			About: "run a PyTorch script once per phase (loader alone,\ncached batches, forward alone, full) and name the\nbottleneck from the comparison (pipetop bisect -h)"},
		{Name: "tune", Usage: "[--budget 10m] [--no-tui] [--json] [--from FILE] -- CMD ARGS...", Raw: true, Flags: tuneFlags, Long: help("tune"),
			About: "bisect a PyTorch script, then try its DataLoader\nand thread settings one trial at a time and advise\nthe measured best (pipetop tune -h)"},
		{Name: "export", Usage: "[flags] [PATH|PID|NAME]", NArgs: [2]int{0, -1}, Whole: true, Flags: viewFlags("export", showExport),
			About: "serve the same readings as Prometheus metrics at\nhttp://LISTEN/metrics (the only live trainer, or\nhost metrics until one appears; a NAME not there\nyet is waited for)"},
		{Name: "record", Usage: "[-o FILE] [--duration D] [PATH|PID|NAME]", NArgs: [2]int{0, 1}, Flags: recordFlags,
			About: "write everything the trainer (every rank of a run)\nsends, and the host readings, to a recording"},
		{Name: "replay", Usage: "FILE [--at D] [--once|--json]", NArgs: [2]int{1, 1}, Flags: replayFlags,
			About: "the monitor on a recording: ←/→ seek, g/G start/end,\n[ ] speed 1x-64x, p pause; --once/--json without\n--at show the whole run (its end, window all)"},
		{Name: "summary", Usage: "FILE [--json]", NArgs: [2]int{1, 1}, Flags: summaryFlags,
			About: "throughput, stage table and verdicts of a whole run"},
		{Name: "compare", Usage: "A B [--json] [--fail-if-slower PCT]", NArgs: [2]int{2, 2}, Flags: compareFlags,
			About: "two runs (recordings or summary JSON), or two bisect\nreports, side by side; exit 4 when B is more than PCT %\nslower (runs: beyond the noise; bisects: full phase)"},
		{Name: "report", Usage: "FILE|DIR [-o report.html]", NArgs: [2]int{1, 1}, Flags: reportFlags,
			About: "a self-contained HTML report of a run, with plots, or\nof a bisect (its JSON, or its --record DIR), phases\nside by side"},
		{Name: "trace", Usage: "FILE -o trace.json", NArgs: [2]int{1, 1}, Flags: traceFlags,
			About: "Chrome/Perfetto trace-event JSON of a recording"},
		{Name: "flame", Usage: "FILE [-o OUT] [--folded]", NArgs: [2]int{1, 1}, Flags: flameFlags,
			About: "the stack samples of a recording (or run summary) as\nspeedscope JSON, or folded stacks for flamegraph.pl"},
		{Name: "stacks", Usage: "PID [--json]", NArgs: [2]int{1, 1}, Flags: stacksFlags,
			About: "every thread's Python stack of a running CPython\n(3.10-3.13) process, read once from outside it; the\nthread that holds the GIL marked"},
	}
}

// program is pipetop's command table and help.
func program() cli.Program {
	return cli.Program{Name: "pipetop", Commands: commands(), Footer: help("footer")}
}

// run runs the command line args: the command its first argument names,
// else the view.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return program().Run(ctx, args, stdout, stderr)
}

// helpFiles are the longer help texts: help/NAME.txt is pipetop NAME -h's
// description, help/footer.txt ends pipetop -h.
//
//go:embed help
var helpFiles embed.FS

// help is the help text help/NAME.txt.
func help(name string) string {
	b, _ := helpFiles.ReadFile("help/" + name + ".txt")
	return string(b)
}
