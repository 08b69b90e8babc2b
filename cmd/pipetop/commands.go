package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// runFunc runs a command on the arguments left once its flags are parsed.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// command is a row of the command table: pipetop NAME runs it, and
// pipetop -h lists it.
type command struct {
	name  string // what follows pipetop; "" is the view
	usage string // its arguments (and main flags), after pipetop NAME
	// about says what it does in pipetop -h, in lines of at most 56
	// columns (wrapped by hand); long is what pipetop NAME -h says
	// instead, "" for about.
	about, long string
	// nargs are the fewest and the most arguments it takes; most -1: any
	// number, which the command checks.
	nargs [2]int
	// raw: the flags end at the first argument, and every argument from
	// there is passed on as it is (pipetop run -- CMD ARGS).
	raw bool
	// whole: pipetop NAME -h prints pipetop's whole help, where the
	// view's flags, which it shares, are listed.
	whole bool
	// flags declares the command's flags on fs and returns what runs it.
	flags func(fs *flag.FlagSet) runFunc
}

// commands is the command table, in the order pipetop -h lists it. The
// view has two rows (its two usage lines); the first is the one run.
func commands() []command {
	return []command{
		{usage: "[flags]", nargs: [2]int{0, -1}, whole: true, flags: viewFlags("", showView),
			about: "attach to the only live trainer, pick one of several,\nor monitor GPU/CPU until a trainer appears"},
		{name: "attach", usage: "PATH|PID|NAME|RUN [flags]", nargs: [2]int{0, -1}, whole: true, flags: viewFlags("attach", showView),
			about: "attach to the given trainer; a rank of a\nmulti-process run attaches every rank of the run"},
		{name: "ls", usage: "[--json]", nargs: [2]int{0, -1}, whole: true, flags: viewFlags("ls", showList),
			about: "list live trainers, the ranks of each run together"},
		{usage: "--prometheus URL [RUN] [--rank R] [--once|--json]", nargs: [2]int{0, -1}, whole: true, flags: viewFlags("", showView),
			about: "every rank of a run on every host, read from the\nPrometheus server that scrapes each host's pipetop\nexport (the only run there when RUN is not given)"},
		{name: "run", usage: "[--name N] [--no-tui] [--json] [--record FILE] [--apply FILE] -- CMD ARGS...", raw: true, flags: runFlags, long: runLong,
			about: "run a PyTorch script with automatic instrumentation\n(see pipetop run -h)"},
		{name: "bisect", usage: "[flags] [--json] [--record DIR] -- CMD ARGS...", raw: true, flags: bisectFlags, long: bisectLong,
			about: "run a PyTorch script once per phase (loader alone,\ncached batches, forward alone, full) and name the\nbottleneck from the comparison (pipetop bisect -h)"},
		{name: "tune", usage: "[--budget 10m] [--no-tui] [--json] [--from FILE] -- CMD ARGS...", raw: true, flags: tuneFlags, long: tuneLong,
			about: "bisect a PyTorch script, then try its DataLoader\nand thread settings one trial at a time and advise\nthe measured best (pipetop tune -h)"},
		{name: "export", usage: "[flags] [PATH|PID|NAME]", nargs: [2]int{0, -1}, whole: true, flags: viewFlags("export", showExport),
			about: "serve the same readings as Prometheus metrics at\nhttp://LISTEN/metrics (the only live trainer, or\nhost metrics until one appears; a NAME not there\nyet is waited for)"},
		{name: "record", usage: "[-o FILE] [--duration D] [PATH|PID|NAME]", nargs: [2]int{0, 1}, flags: recordFlags,
			about: "write everything the trainer (every rank of a run)\nsends, and the host readings, to a recording"},
		{name: "replay", usage: "FILE [--at D] [--once|--json]", nargs: [2]int{1, 1}, flags: replayFlags,
			about: "the monitor on a recording: ←/→ seek, g/G start/end,\n[ ] speed 1x-64x, p pause; --once/--json without\n--at show the whole run (its end, window all)"},
		{name: "summary", usage: "FILE [--json]", nargs: [2]int{1, 1}, flags: summaryFlags,
			about: "throughput, stage table and verdicts of a whole run"},
		{name: "compare", usage: "A B [--json] [--fail-if-slower PCT]", nargs: [2]int{2, 2}, flags: compareFlags,
			about: "two runs (recordings or summary JSON), or two bisect\nreports, side by side; exit 4 when B is more than PCT %\nslower (runs: beyond the noise; bisects: full phase)"},
		{name: "report", usage: "FILE|DIR [-o report.html]", nargs: [2]int{1, 1}, flags: reportFlags,
			about: "a self-contained HTML report of a run, with plots, or\nof a bisect (its JSON, or its --record DIR), phases\nside by side"},
		{name: "trace", usage: "FILE -o trace.json", nargs: [2]int{1, 1}, flags: traceFlags,
			about: "Chrome/Perfetto trace-event JSON of a recording"},
		{name: "flame", usage: "FILE [-o OUT] [--folded]", nargs: [2]int{1, 1}, flags: flameFlags,
			about: "the stack samples of a recording (or run summary) as\nspeedscope JSON, or folded stacks for flamegraph.pl"},
		{name: "stacks", usage: "PID [--json]", nargs: [2]int{1, 1}, flags: stacksFlags,
			about: "every thread's Python stack of a running CPython\n(3.10-3.13) process, read once from outside it; the\nthread that holds the GIL marked"},
	}
}

// run runs the command line args: the command its first argument names,
// else the view.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, args := lookup(args)
	fs := c.flagSet(stderr)
	do := c.flags(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	return do(ctx, pos, stdout, stderr)
}

// lookup is the command args name and the arguments after its name; the
// view (with all of args) when the first names none.
func lookup(args []string) (command, []string) {
	table := commands()
	if len(args) > 0 {
		for _, c := range table {
			if c.name != "" && c.name == args[0] {
				return c, args[1:]
			}
		}
	}
	return table[0], args
}

// flagSet is the command's flag set, which prints its help to stderr.
func (c command) flagSet(stderr io.Writer) *flag.FlagSet {
	name := strings.TrimSpace("pipetop " + c.name)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		if c.whole {
			writeHelp(fs)
			return
		}
		text := c.long
		if text == "" {
			text = c.about
		}
		fmt.Fprintf(fs.Output(), "usage: %s %s\n\n%s\n\nflags:\n", name, c.usage, text)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses the flags of args wherever they stand among the arguments
// (up to the first argument for a raw command) and checks the arguments'
// count.
func (c command) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if c.raw {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(err)
		}
		return fs.Args(), nil
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if lo, hi := c.nargs[0], c.nargs[1]; hi >= 0 && (len(pos) < lo || len(pos) > hi) {
		fs.Usage()
		return nil, usageError{fmt.Errorf("%s: want %d to %d arguments, got %d", fs.Name(), lo, hi, len(pos))}
	}
	return pos, nil
}

// flagError is a usage error, but for -h, which is no error.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}

// descColumn is where pipetop -h starts the description of a command.
const descColumn = 39

// writeHelp writes pipetop -h: a usage line and description for each row
// of the command table, then the view's flags (fs), exit statuses and
// environment.
func writeHelp(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintln(w, "usage:")
	for _, c := range commands() {
		fmt.Fprint(w, helpEntry(c))
	}
	fmt.Fprint(w, "\nflags:\n")
	fs.PrintDefaults()
	fmt.Fprint(w, helpFooter)
}

// helpEntry is a command's lines in pipetop -h: its usage line, and its
// description from descColumn, beside the usage line when it fits.
func helpEntry(c command) string {
	head := "  " + strings.Join(strings.Fields("pipetop "+c.name+" "+c.usage), " ")
	indent := strings.Repeat(" ", descColumn)
	var b strings.Builder
	b.WriteString(head)
	lines := strings.Split(c.about, "\n")
	if len(head) < descColumn {
		b.WriteString(strings.Repeat(" ", descColumn-len(head)) + lines[0] + "\n")
		lines = lines[1:]
	} else {
		b.WriteString("\n")
	}
	for _, l := range lines {
		b.WriteString(indent + l + "\n")
	}
	return b.String()
}

// helpFooter ends pipetop -h.
const helpFooter = `
exit status: 0 ok; 1 error; 2 bad command line; 3 the trainer asked for
(or the only live one) could not be attached: none matches, or it failed
(wrong protocol version, bad frames, no hello, refused) — --once and --json
still print their snapshot, with link.state "failed" and link.detail saying why;
with --prometheus, the run could not be read (server unreachable, not
Prometheus' API, no such run).
4 pipetop compare --fail-if-slower: B regressed.

environment: PIPETOP_SOCKET_DIR (where trainers' sockets are),
PIPETOP_HELLO_TIMEOUT (default 5s), PIPETOP_AGGREGATES (1: ask trainers for
one aggregate a second instead of every step, 0: never; default: the
full-screen view asks, --once and --json do not; with it they collect a
second longer than --interval).
`
