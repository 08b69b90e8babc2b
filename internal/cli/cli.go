// Package cli runs a program of subcommands from one command table: each
// row gives a command's name, usage line, description, flags and run. The
// program's help (PROGRAM -h) is generated from the table, PROGRAM NAME -h
// prints a command's own usage, a command's flags may stand anywhere
// among its arguments (up to the first argument of a raw one), and a bad
// command line is a UsageError. pipetop's command table is
// cmd/pipetop/commands.go.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
)

// Func runs a command on the arguments left once its flags are parsed.
type Func func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Command is a row of the command table: PROGRAM NAME runs it, and
// PROGRAM -h lists it.
type Command struct {
	Name  string // what follows the program's name; "" is the default command
	Usage string // its arguments (and main flags), after PROGRAM NAME
	// About says what it does in PROGRAM -h, in lines wrapped by hand;
	// Long is what PROGRAM NAME -h says instead, "" for About.
	About, Long string
	// NArgs are the fewest and the most arguments it takes; most -1: any
	// number, which the command checks.
	NArgs [2]int
	// Raw: the flags end at the first argument, and every argument from
	// there is passed on as it is (pipetop run -- CMD ARGS).
	Raw bool
	// Whole: PROGRAM NAME -h prints the program's whole help, where the
	// default command's flags, which it shares, are listed.
	Whole bool
	// Flags declares the command's flags on fs and returns what runs it.
	Flags func(fs *flag.FlagSet) Func
}

// Program is a command table and what its help ends with.
type Program struct {
	Name string
	// Commands are the rows, in the order PROGRAM -h lists them; the
	// first is run when no row is named.
	Commands []Command
	// Footer ends PROGRAM -h (exit statuses, environment).
	Footer string
}

// UsageError is a bad command line; a program exits with status 2.
type UsageError struct{ error }

// Usage is err as a UsageError.
func Usage(err error) UsageError { return UsageError{err} }

// Unwrap is the command line's mistake.
func (u UsageError) Unwrap() error { return u.error }

// Status is the error of a command that ends with exit status Code: Err
// says why, and Quiet that the command already said it (a regression
// gate's line, a child's own exit status).
type Status struct {
	Code  int
	Err   error
	Quiet bool
}

func (s Status) Error() string {
	if s.Err == nil {
		return fmt.Sprintf("exit status %d", s.Code)
	}
	return s.Err.Error()
}

// Unwrap is why the command ended so.
func (s Status) Unwrap() error { return s.Err }

// ExitCode is the exit status for the error a command returned, printed
// to stderr (after the program's name) unless the status says it: 0 for
// none or -h, 2 for a UsageError, a Status's own code, else 1.
func (p Program) ExitCode(err error, stderr io.Writer) int {
	var st Status
	var ue UsageError
	code := 1
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &st):
		if st.Quiet {
			return st.Code
		}
		code = st.Code
	case errors.As(err, &ue):
		code = 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
	return code
}

// Run runs the command line args: the command its first argument names,
// else the first row.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, args := p.Lookup(args)
	fs := p.FlagSet(c, stderr)
	do := c.Flags(fs)
	pos, err := p.Parse(c, fs, args)
	if err != nil {
		return err
	}
	return do(ctx, pos, stdout, stderr)
}

// Lookup is the command args name and the arguments after its name; the
// first row (with all of args) when the first names none.
func (p Program) Lookup(args []string) (Command, []string) {
	if len(args) > 0 {
		for _, c := range p.Commands {
			if c.Name != "" && c.Name == args[0] {
				return c, args[1:]
			}
		}
	}
	return p.Commands[0], args
}

// FlagSet is c's flag set, which prints its help to stderr.
func (p Program) FlagSet(c Command, stderr io.Writer) *flag.FlagSet {
	name := strings.TrimSpace(p.Name + " " + c.Name)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		if c.Whole {
			p.writeHelp(fs)
			return
		}
		text := c.Long
		if text == "" {
			text = c.About
		}
		fmt.Fprintf(fs.Output(), "usage: %s %s\n\n%s\n\nflags:\n", name, c.Usage, strings.TrimRight(text, "\n"))
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses the flags of args wherever they stand among the arguments
// (up to the first argument for a raw command) and checks the arguments'
// count.
func (p Program) Parse(c Command, fs *flag.FlagSet, args []string) ([]string, error) {
	if c.Raw {
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
	if lo, hi := c.NArgs[0], c.NArgs[1]; hi >= 0 && (len(pos) < lo || len(pos) > hi) {
		fs.Usage()
		return nil, UsageError{fmt.Errorf("%s: want %d to %d arguments, got %d", fs.Name(), lo, hi, len(pos))}
	}
	return pos, nil
}

// flagError is a usage error, but for -h, which is no error.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return UsageError{err}
}

// DescColumn is where PROGRAM -h starts the description of a command.
const DescColumn = 39

// writeHelp writes PROGRAM -h: a usage line and description for each
// row of the table, then the first row's flags (fs), and the footer.
func (p Program) writeHelp(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintln(w, "usage:")
	for _, c := range p.Commands {
		fmt.Fprint(w, p.Entry(c))
	}
	fmt.Fprint(w, "\nflags:\n")
	fs.PrintDefaults()
	fmt.Fprint(w, p.Footer)
}

// Entry is a command's lines in PROGRAM -h: its usage line, and its
// description from DescColumn, beside the usage line when it fits.
func (p Program) Entry(c Command) string {
	head := "  " + strings.Join(strings.Fields(p.Name+" "+c.Name+" "+c.Usage), " ")
	indent := strings.Repeat(" ", DescColumn)
	var b strings.Builder
	b.WriteString(head)
	lines := strings.Split(c.About, "\n")
	if len(head) < DescColumn {
		b.WriteString(strings.Repeat(" ", DescColumn-len(head)) + lines[0] + "\n")
		lines = lines[1:]
	} else {
		b.WriteString("\n")
	}
	for _, l := range lines {
		b.WriteString(indent + l + "\n")
	}
	return b.String()
}

// Set is the names of the flags of fs given on the command line.
func Set(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// List is a comma-separated flag's items, blank ones left out.
func List(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// StartProfile starts a Go CPU profile written to path (a --cpuprofile
// flag); stop ends it.
func StartProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
