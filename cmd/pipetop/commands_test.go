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

	"github.com/pipetop/pipetop/internal/cli"
)

// TestCommandTable: every row has a usage line, a description and flags
// that give it a run; names are unique, and the first row is the view.
func TestCommandTable(t *testing.T) {
	table := commands()
	if table[0].Name != "" {
		t.Fatalf("the first row is %q, want the view", table[0].Name)
	}
	seen := map[string]bool{}
	for _, c := range table {
		t.Run("pipetop "+c.Name, func(t *testing.T) {
			if c.Usage == "" || c.About == "" || c.Flags == nil {
				t.Fatalf("row %+v lacks a usage, a description or flags", c)
			}
			if c.Name != "" && seen[c.Name] {
				t.Errorf("two rows named %q", c.Name)
			}
			seen[c.Name] = true
			if do := c.Flags(program().FlagSet(c, io.Discard)); do == nil {
				t.Error("its flags give no run")
			}
			for _, l := range strings.Split(c.About, "\n") {
				if n := len([]rune(l)); cli.DescColumn+n > 100 {
					t.Errorf("description line %q is %d columns: wider than 100 in pipetop -h", l, cli.DescColumn+n)
				}
			}
			if c.Raw && c.NArgs != [2]int{} {
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
			line := strings.Join(strings.Fields("pipetop "+c.Name+" "+c.Usage), " ")
			if !strings.Contains(help, "  "+line) {
				t.Errorf("pipetop %q does not list %q:\n%s", args, line, help)
			}
			for _, l := range strings.Split(c.About, "\n") {
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
		if c.Whole {
			continue
		}
		var errb bytes.Buffer
		if err := run(context.Background(), []string{c.Name, "-h"}, io.Discard, &errb); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("pipetop %s -h: %v, want flag.ErrHelp", c.Name, err)
		}
		if want := "usage: pipetop " + c.Name + " " + c.Usage + "\n"; !strings.HasPrefix(errb.String(), want) || !strings.Contains(errb.String(), "\nflags:\n") {
			t.Errorf("pipetop %s -h:\n%s\nwant it to start with %q and list the flags", c.Name, errb.String(), want)
		}
	}
}

// TestRunTakesRawArgs: pipetop run hands every argument after its flags
// (flags of the command included) to the command as it is.
func TestRunTakesRawArgs(t *testing.T) {
	c, err := parseRun([]string{"--no-tui", "--", "python3", "-u", "train.py", "--json", "x"}, io.Discard)
	if err != nil || strings.Join(c.Argv, " ") != "python3 -u train.py --json x" || c.JSON {
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
		entries.WriteString(program().Entry(c))
	}
	if !strings.Contains(string(doc), "```\n"+entries.String()+"```\n") {
		t.Errorf("docs/pipetop.md's list of commands is not pipetop -h's; it should read:\n%s", entries.String())
	}
}
