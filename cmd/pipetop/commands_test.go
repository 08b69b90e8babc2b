package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// TestCommandTable: every row has a usage line, a description and flags
// that give it a run; names are unique, and the first row is the view.
func TestCommandTable(t *testing.T) {
	table := commands()
	if table[0].name != "" {
		t.Fatalf("the first row is %q, want the view", table[0].name)
	}
	seen := map[string]bool{}
	for _, c := range table {
		t.Run("pipetop "+c.name, func(t *testing.T) {
			if c.usage == "" || c.about == "" || c.flags == nil {
				t.Fatalf("row %+v lacks a usage, a description or flags", c)
			}
			if c.name != "" && seen[c.name] {
				t.Errorf("two rows named %q", c.name)
			}
			seen[c.name] = true
			if do := c.flags(c.flagSet(io.Discard)); do == nil {
				t.Error("its flags give no run")
			}
			for _, l := range strings.Split(c.about, "\n") {
				if n := len([]rune(l)); descColumn+n > 100 {
					t.Errorf("description line %q is %d columns: wider than 100 in pipetop -h", l, descColumn+n)
				}
			}
			if c.raw && c.nargs != [2]int{} {
				t.Error("a raw command checks its own arguments: no nargs")
			}
		})
	}
}

// TestHelpListsEveryCommand: pipetop -h (and attach, ls and export -h,
// which share the view's flags) list every row of the table with its
// description; every other command's -h prints its own usage line.
func TestHelpListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"attach", "-h"}, {"ls", "--help"}, {"export", "-h"}} {
		var errb bytes.Buffer
		if err := run(context.Background(), args, io.Discard, &errb); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("pipetop %q: %v, want flag.ErrHelp", args, err)
		}
		help := errb.String()
		for _, c := range commands() {
			line := strings.Join(strings.Fields("pipetop "+c.name+" "+c.usage), " ")
			if !strings.Contains(help, "  "+line) {
				t.Errorf("pipetop %q does not list %q:\n%s", args, line, help)
			}
			for _, l := range strings.Split(c.about, "\n") {
				if !strings.Contains(help, l+"\n") {
					t.Errorf("pipetop %q lacks %q", args, l)
				}
			}
		}
		for _, want := range []string{"\nflags:\n", "-interval duration", "exit status: 0 ok", "environment: PIPETOP_SOCKET_DIR"} {
			if !strings.Contains(help, want) {
				t.Errorf("pipetop %q lacks %q", args, want)
			}
		}
	}
	for _, c := range commands() {
		if c.whole {
			continue
		}
		var errb bytes.Buffer
		if err := run(context.Background(), []string{c.name, "-h"}, io.Discard, &errb); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("pipetop %s -h: %v, want flag.ErrHelp", c.name, err)
		}
		if want := "usage: pipetop " + c.name + " " + c.usage + "\n"; !strings.HasPrefix(errb.String(), want) || !strings.Contains(errb.String(), "\nflags:\n") {
			t.Errorf("pipetop %s -h:\n%s\nwant it to start with %q and list the flags", c.name, errb.String(), want)
		}
	}
}

// TestHelpEntryLayout: a usage line short enough has its description
// beside it, from descColumn; a longer one has it on the lines below.
func TestHelpEntryLayout(t *testing.T) {
	short := helpEntry(command{name: "ls", usage: "[--json]", about: "one\ntwo"})
	if want := "  pipetop ls [--json]" + strings.Repeat(" ", descColumn-21) + "one\n" + strings.Repeat(" ", descColumn) + "two\n"; short != want {
		t.Errorf("short entry:\n%q\nwant\n%q", short, want)
	}
	long := helpEntry(command{name: "attach", usage: "PATH|PID|NAME|RUN [flags]", about: "one"})
	if want := "  pipetop attach PATH|PID|NAME|RUN [flags]\n" + strings.Repeat(" ", descColumn) + "one\n"; long != want {
		t.Errorf("long entry:\n%q\nwant\n%q", long, want)
	}
}

// TestLookup: the first argument names a command; anything else (a flag,
// a trainer, nothing) is the view's, with every argument kept.
func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string
		rest int
	}{
		{nil, "", 0},
		{[]string{"--once"}, "", 1},
		{[]string{"demo"}, "", 1},
		{[]string{"replay", "x"}, "replay", 1},
		{[]string{"run", "--", "ls", "-l"}, "run", 3},
		{[]string{"ls"}, "ls", 0},
	} {
		c, rest := lookup(tc.args)
		if c.name != tc.name || len(rest) != tc.rest {
			t.Errorf("lookup(%q) = %q with %d arguments, want %q with %d", tc.args, c.name, len(rest), tc.name, tc.rest)
		}
	}
}

// TestRunTakesRawArgs: pipetop run hands every argument after its flags
// (flags of the command included) to the command as it is.
func TestRunTakesRawArgs(t *testing.T) {
	c, err := parseRun([]string{"--no-tui", "--", "python3", "-u", "train.py", "--json", "x"}, io.Discard)
	if err != nil || strings.Join(c.argv, " ") != "python3 -u train.py --json x" || c.asJSON {
		t.Errorf("parseRun = %+v, %v", c, err)
	}
}

// TestHelpInDocs: docs/pipetop.md lists the commands as pipetop -h does
// (paste the entries of pipetop -h there when the table changes).
func TestHelpInDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/pipetop.md")
	if err != nil {
		t.Fatal(err)
	}
	var entries strings.Builder
	for _, c := range commands() {
		entries.WriteString(helpEntry(c))
	}
	if !strings.Contains(string(doc), "```\n"+entries.String()+"```\n") {
		t.Errorf("docs/pipetop.md's list of commands is not pipetop -h's; it should read:\n%s", entries.String())
	}
}
