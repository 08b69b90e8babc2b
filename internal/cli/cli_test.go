package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

// demo is a program of three commands: the default (any arguments), one
// of a fixed count and a raw one.
func demo(got *[]string) Program {
	run := func(fs *flag.FlagSet) Func {
		v := fs.Bool("v", false, "verbose")
		return func(_ context.Context, args []string, _, _ io.Writer) error {
			*got = append([]string{map[bool]string{true: "-v"}[*v]}, args...)
			return nil
		}
	}
	return Program{Name: "prog", Footer: "\nfooter\n", Commands: []Command{
		{Usage: "[flags]", NArgs: [2]int{0, -1}, Whole: true, Flags: run, About: "the default"},
		{Name: "two", Usage: "A B", NArgs: [2]int{2, 2}, Flags: run, About: "one\ntwo"},
		{Name: "raw", Usage: "-- CMD", Raw: true, Flags: run, About: "runs CMD", Long: "runs CMD at length"},
	}}
}

// TestRun: flags stand anywhere among a command's arguments, up to the
// first of a raw one; a wrong count is a usage error; -h is no error.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"x", "-v"}, "-v x", false},
		{[]string{"two", "a", "-v", "b"}, "-v a b", false},
		{[]string{"two", "a"}, "", true},
		{[]string{"raw", "-v", "ls", "-v"}, "-v ls -v", false},
		{[]string{"two", "-bogus", "a", "b"}, "", true},
	} {
		var got []string
		err := demo(&got).Run(context.Background(), tc.args, io.Discard, io.Discard)
		var ue UsageError
		if errors.As(err, &ue) != tc.usage || (!tc.usage && (err != nil || strings.TrimSpace(strings.Join(got, " ")) != tc.want)) {
			t.Errorf("%q: ran %q, %v; want %q (usage error: %v)", tc.args, got, err, tc.want, tc.usage)
		}
	}
	var errb bytes.Buffer
	if err := demo(new([]string)).Run(context.Background(), []string{"raw", "-h"}, io.Discard, &errb); !errors.Is(err, flag.ErrHelp) ||
		!strings.HasPrefix(errb.String(), "usage: prog raw -- CMD\n\nruns CMD at length\n\nflags:\n") {
		t.Errorf("raw -h: %v\n%s", err, &errb)
	}
	errb.Reset()
	if err := demo(new([]string)).Run(context.Background(), []string{"-h"}, io.Discard, &errb); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(errb.String(), "  prog two A B") || !strings.HasSuffix(errb.String(), "\nfooter\n") {
		t.Errorf("-h: %v\n%s", err, &errb)
	}
}

// TestEntryLayout: a usage line short enough has its description beside
// it, from DescColumn; a longer one has it on the lines below.
func TestEntryLayout(t *testing.T) {
	p := Program{Name: "pipetop"}
	short := p.Entry(Command{Name: "ls", Usage: "[--json]", About: "one\ntwo"})
	if want := "  pipetop ls [--json]" + strings.Repeat(" ", DescColumn-21) + "one\n" + strings.Repeat(" ", DescColumn) + "two\n"; short != want {
		t.Errorf("short entry:\n%q\nwant\n%q", short, want)
	}
	long := p.Entry(Command{Name: "attach", Usage: "PATH|PID|NAME|RUN [flags]", About: "one"})
	if want := "  pipetop attach PATH|PID|NAME|RUN [flags]\n" + strings.Repeat(" ", DescColumn) + "one\n"; long != want {
		t.Errorf("long entry:\n%q\nwant\n%q", long, want)
	}
}

// TestLookup: the first argument names a command; anything else (a flag,
// an argument, nothing) is the first row's, with every argument kept.
func TestLookup(t *testing.T) {
	p := demo(new([]string))
	for _, tc := range []struct {
		args []string
		name string
		rest int
	}{
		{nil, "", 0},
		{[]string{"--once"}, "", 1},
		{[]string{"demo"}, "", 1},
		{[]string{"two", "x"}, "two", 1},
		{[]string{"raw", "--", "ls", "-l"}, "raw", 3},
	} {
		c, rest := p.Lookup(tc.args)
		if c.Name != tc.name || len(rest) != tc.rest {
			t.Errorf("Lookup(%q) = %q with %d arguments, want %q with %d", tc.args, c.Name, len(rest), tc.name, tc.rest)
		}
	}
}

// TestExitCode: a Status's code (said unless quiet), 2 for a usage error,
// 1 for any other error, 0 for none and for -h.
func TestExitCode(t *testing.T) {
	p := Program{Name: "prog"}
	for _, tc := range []struct {
		err  error
		code int
		said string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{errors.New("broken"), 1, "prog: broken\n"},
		{Usage(errors.New("bad flag")), 2, "prog: bad flag\n"},
		{Status{Code: 3, Err: errors.New("no trainer")}, 3, "prog: no trainer\n"},
		{Status{Code: 4, Err: errors.New("slower"), Quiet: true}, 4, ""},
		{fmt.Errorf("wrapped: %w", Status{Code: 130, Quiet: true}), 130, ""},
	} {
		var errb bytes.Buffer
		if code := p.ExitCode(tc.err, &errb); code != tc.code || errb.String() != tc.said {
			t.Errorf("ExitCode(%v) = %d saying %q, want %d saying %q", tc.err, code, errb.String(), tc.code, tc.said)
		}
	}
}

func TestList(t *testing.T) {
	if got := strings.Join(List(" cached, full,,"), "|"); got != "cached|full" {
		t.Errorf("List = %q", got)
	}
}
