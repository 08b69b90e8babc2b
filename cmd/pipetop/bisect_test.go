package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// parseBisect parses the arguments after "bisect" as bisect does, without
// running the command.
func parseBisect(args []string) (bisectConfig, error) {
	p := program()
	cmd, args := p.Lookup(append([]string{"bisect"}, args...))
	fs := p.FlagSet(cmd, io.Discard)
	var c bisectConfig
	c.declare(fs)
	argv, err := p.Parse(cmd, fs, args)
	if err != nil {
		return c, err
	}
	return c, c.check(argv)
}

func TestParseBisect(t *testing.T) {
	c, err := parseBisect([]string{"--seconds-per-phase", "5", "--phases", "cached, full", "--", "python3", "train.py", "--lr", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.seconds != 5 || strings.Join(c.Phases, ",") != "cached,full" || strings.Join(c.Argv, " ") != "python3 train.py --lr 1" {
		t.Errorf("parsed %+v", c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "bisect needs a command"},
		{[]string{"--seconds-per-phase", "0", "--", "x"}, "--seconds-per-phase 0"},
		{[]string{"--phases", "loader,bogus", "--", "x"}, `unknown phase "bogus"`},
		{[]string{"--cache-mb", "-1", "--", "x"}, "--cache-mb -1"},
		{[]string{"--name", "a/b", "--", "x"}, "--name"},
	} {
		_, err := parseBisect(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The live view in a terminal: the monitor attached to each phase in turn,
// the phase in its header, then the table and verdict once it is over.
func TestBisectLiveTmux(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	script, err := filepath.Abs(filepath.Join("testdata", "bisect", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logf := filepath.Join(dir, "stderr")
	ts := newTmuxScreen(t, "bisect", "cd "+dir+" && env PIPETOP_SOCKET_DIR="+e.sockets+" PIPETOP_CACHE_DIR="+e.cache+" TERM=xterm-256color "+
		e.bin+" bisect --no-gpu --seconds-per-phase 3 --phases cached,full -- "+debPython+" "+script+" --case compute 2>"+logf+"; echo EXIT=$?; sleep 60", logf)
	wait := func(what string, ok func(string) bool) string {
		t.Helper()
		return ts.wait(what, 50*time.Second, ok)
	}
	for _, phase := range []string{"cached", "full"} {
		wait("the monitor on phase "+phase, func(s string) bool {
			return strings.Contains(s, "phase "+phase) && strings.Contains(s, "● live")
		})
	}
	s := wait("the table after the bisect", func(s string) bool { return strings.Contains(s, "EXIT=") })
	for _, want := range []string{"phase       batch     it/s", "cached ", "full ", "verdict: ", "EXIT=0"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen after the bisect lacks %q:\n%s", want, s)
		}
	}
}
