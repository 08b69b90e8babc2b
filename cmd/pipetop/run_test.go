package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/monitor/summary"
)

// debPython is Debian's Python, with torch; the python3 first on PATH may
// be another one without it.
const debPython = "/usr/bin/python3"

// parseRun parses the arguments after "run" as run does, without running
// the command.
func parseRun(args []string, stderr io.Writer) (runConfig, error) {
	p := program()
	cmd, args := p.Lookup(append([]string{"run"}, args...))
	fs := p.FlagSet(cmd, stderr)
	var c runConfig
	c.declare(fs)
	argv, err := p.Parse(cmd, fs, args)
	if err != nil {
		return c, err
	}
	err = c.check(argv)
	return c, err
}

func TestParseRun(t *testing.T) {
	c, err := parseRun([]string{"--name", "exp1", "--no-tui", "--", "python3", "train.py", "--lr", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.name != "exp1" || !c.noTUI || strings.Join(c.Argv, " ") != "python3 train.py --lr 1" {
		t.Errorf("parsed %+v", c)
	}
	c, err = parseRun([]string{"python3", "-u", "train.py"}, io.Discard)
	if err != nil || strings.Join(c.Argv, " ") != "python3 -u train.py" || c.noTUI {
		t.Errorf("without --: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "run needs a command"},
		{[]string{"--"}, "run needs a command"},
		{[]string{"--name", "a/b", "--", "x"}, `--name "a/b"`},
		{[]string{"--bogus", "--", "x"}, "bogus"},
	} {
		_, err := parseRun(tc.args, io.Discard)
		var ue cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseRun(%q) = %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// runEnvFor is the pipetop binary and a test's private socket and cache directories.
type runEnvFor struct {
	bin, sockets, cache string
}

func newRunEnv(t *testing.T) *runEnvFor {
	t.Helper()
	if testing.Short() {
		t.Skip("pipetop run tests start Python: skipped in -short mode")
	}
	requireTorch(t)
	e := &runEnvFor{bin: pipetopBin(t), cache: t.TempDir()}
	d, err := os.MkdirTemp("/tmp", "ptrun")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	e.sockets = d
	return e
}

// requireTorch fails unless Debian's Python imports torch (PIPETOP_NO_LIBTORCH=1 skips).
func requireTorch(t *testing.T) {
	t.Helper()
	if os.Getenv("PIPETOP_NO_LIBTORCH") == "1" {
		t.Skip("PIPETOP_NO_LIBTORCH=1: skipping the PyTorch runs")
	}
	if out, err := exec.Command(debPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (apt-get install python3-torch): %v\n%s", debPython, err, out)
	}
}

// command is pipetop run ARGS with the test's directories.
func (e *runEnvFor) command(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, append([]string{"run"}, args...)...)
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+e.sockets, "PIPETOP_CACHE_DIR="+e.cache, "PIPETOP_SUMMARY_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// run runs pipetop run --no-tui --json ARGS and returns the summaries, the
// command's stderr and its exit status.
func (e *runEnvFor) run(t *testing.T, env []string, args ...string) ([]summary.Script, string, int) {
	t.Helper()
	// Each run has its own summary directory (pipetop run reports every
	// summary written there since it started).
	cmd := e.command(t, env, append([]string{"--no-tui", "--json", "--"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("pipetop run %q: %v", args, err)
	}
	var docs []summary.Script
	if err := json.Unmarshal(stdout.Bytes(), &docs); err != nil {
		t.Fatalf("pipetop run --json %q: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
	}
	return docs, stderr.String(), status
}

// example is the path of an examples/auto script.
func example(name string) string { return filepath.Join("..", "..", "examples", "auto", name) }

// TestRunExamples runs each unmodified script of examples/auto under
// pipetop run and checks the step count (= optimizer steps) and the stage
// shares (after the first step, which carries the start-up) against the
// costs the script plants.
func TestRunExamples(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	for _, tc := range []struct {
		script string
		steps  int64
		shares map[string]float64 // planted, in percent of the run
	}{
		{"loop.py", 40, map[string]float64{"data_wait": 40, "forward": 40, "optim": 20}},
		{"accumulate.py", 15, map[string]float64{"data_wait": 40, "forward": 40, "optim": 20}},
		{"two_optimizers.py", 30, map[string]float64{"forward": 50, "optim": 50}},
		{"validation.py", 30, map[string]float64{"eval": 24, "forward": 38, "optim": 38}},
		{"bf16.py", 20, map[string]float64{"forward": 50, "optim": 30, "other": 20}},
	} {
		t.Run(strings.TrimSuffix(tc.script, ".py"), func(t *testing.T) {
			docs, stderr, status := e.run(t, nil, debPython, example(tc.script))
			if status != 0 || len(docs) != 1 {
				t.Fatalf("status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
			}
			s := docs[0]
			if s.Steps != tc.steps {
				t.Errorf("steps = %d, want %d (optimizer steps)", s.Steps, tc.steps)
			}
			// Planted sleeps overshoot when the machine is overloaded (other
			// jobs on few cores); shares off by more than 10 points get one
			// more run. An attribution bug is off both times.
			if off := shareErrors(t, &s, tc.shares); len(off) > 0 {
				t.Logf("shares off on the first run (load %s): %s; running again", loadavg(), strings.Join(off, "; "))
				docs, stderr, status = e.run(t, nil, debPython, example(tc.script))
				if status != 0 || len(docs) != 1 {
					t.Fatalf("second run: status %d, %d summaries; stderr:\n%s", status, len(docs), stderr)
				}
				for _, msg := range shareErrors(t, &docs[0], tc.shares) {
					t.Errorf("%s; stages %+v", msg, docs[0].Stages)
				}
			}
			if tc.script == "loop.py" {
				l := s.Loader
				if l == nil || l.Source != "torch" || l.Workers != 2 || len(l.WorkerBusyEach) != 2 || l.Prefetch != 2 || l.BatchesPerSec <= 0 {
					t.Errorf("loader stats %+v: want 2 torch workers with their busy fractions", l)
				} else if l.WorkerBusy < 0.5 {
					t.Errorf("workers busy %.2f: the planted dataset keeps them busy most of the time", l.WorkerBusy)
				}
			}
			if s.Verdict == nil || s.Verdict.Headline == "" {
				t.Errorf("no verdict in %+v", s)
			}
		})
	}
}

// shareErrors names the stages whose steady share is more than 10 points
// from the planted one.
func shareErrors(t *testing.T, s *summary.Script, planted map[string]float64) []string {
	t.Helper()
	var off []string
	for name, want := range planted {
		if got := steadyShare(t, s, name); math.Abs(got-want) > 10 {
			off = append(off, fmt.Sprintf("%s share = %.1f %%, planted %.0f %% (±10 points)", name, got, want))
		}
	}
	return off
}

// loadavg is the 1-minute load average, for test logs.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// steadyShare is a stage's share of the run without its first step, whose
// start-up (loader workers forking, lazy initialization) the scripts do not
// plant; -1 when the stage is missing.
func steadyShare(t *testing.T, s *summary.Script, name string) float64 {
	t.Helper()
	if s.FirstStep == nil {
		t.Fatalf("summary without first_step: %+v", s)
	}
	var total, first int64 = -1, 0
	for _, st := range s.Stages {
		if st.Name == name {
			total = st.TotalNs
		}
	}
	for _, st := range s.FirstStep.Stages {
		if st.Name == name {
			first = st.CPUNs
		}
	}
	if total < 0 {
		return -1
	}
	return 100 * float64(total-first) / float64(s.WallNs-s.FirstStep.WallNs)
}

// TestRunInert checks that the instrumentation never changes what a run
// does: a crash keeps its status and its summary, a fork, a loop without a
// DataLoader, PIPETOP_AUTO=0 and a Python without torch.
func TestRunInert(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	script := func(name string) string { return filepath.Join("testdata", "run", name) }
	other, err := exec.LookPath("python3")
	noTorch := err == nil && exec.Command(other, "-c", "import torch").Run() != nil
	for _, tc := range []struct {
		name   string
		env    []string
		argv   []string
		status int
		output []string // in the command's output
		steps  int64    // -1: no summary
	}{
		{"crash", nil, []string{debPython, script("crash.py")}, 1, []string{"planted crash at step 5"}, 5},
		{"fork", nil, []string{debPython, script("fork.py")}, 0, []string{"child sum 4.0", "child status 7"}, 6},
		{"no DataLoader", nil, []string{debPython, script("noloader.py")}, 0, []string{"inference True"}, 7},
		{"PIPETOP_AUTO=0", []string{"PIPETOP_AUTO=0"}, []string{debPython, example("two_optimizers.py")}, 0, []string{"final losses"}, -1},
		{"python without torch", nil, []string{other, script("notorch.py")}, 4, []string{"no torch: torch", "sum 45"}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.argv[0] == other && !noTorch {
				t.Skipf("the python3 on PATH (%q) is missing or has torch", other)
			}
			t.Parallel() // none of these checks a timing
			docs, stderr, status := e.run(t, tc.env, tc.argv...)
			if status != tc.status {
				t.Errorf("status %d, want %d; stderr:\n%s", status, tc.status, stderr)
			}
			for _, want := range tc.output {
				if !strings.Contains(stderr, want) {
					t.Errorf("output lacks %q:\n%s", want, stderr)
				}
			}
			switch {
			case tc.steps < 0 && len(docs) != 0:
				t.Errorf("summaries %+v, want none", docs)
			case tc.steps >= 0 && (len(docs) != 1 || docs[0].Steps != tc.steps):
				t.Errorf("summaries %+v, want one of %d steps", docs, tc.steps)
			}
		})
	}
}

// TestRunForwardsSignals sends SIGTERM to pipetop run; the command gets it
// and pipetop exits with the command's status (128+15).
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	cmd := e.command(t, nil, "--no-tui", "--", debPython, "-c",
		"import sys,time; print('ready', flush=True); time.sleep(30)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("child did not start: %q %v", buf, err)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("pipetop run after SIGTERM: %v, want exit status 143", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("pipetop run took %v to stop", d)
	}
}

// TestRunLiveViewer attaches pipetop --json to a script running under
// pipetop run: the automatic stages and the DataLoader's statistics reach
// the viewer over the socket.
func TestRunLiveViewer(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	cmd := e.command(t, nil, "--no-tui", "--name", "live", "--", debPython, example("loop.py"), "--steps", "100")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(e.sockets, "live.*.sock"))
		if len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket for live in %s; stderr:\n%s", e.sockets, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	view := exec.Command(e.bin, "attach", "live", "--json", "--interval", "1500ms", "--window", "all", "--no-gpu")
	view.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+e.sockets)
	b, err := view.Output()
	if err != nil {
		t.Fatalf("pipetop --json: %v", err)
	}
	var snap struct {
		Trainer *struct {
			Name   string   `json:"name"`
			Stages []string `json:"stages"`
		} `json:"trainer"`
		Summary *struct {
			Steps  int `json:"steps"`
			Stages []struct {
				Name  string  `json:"name"`
				Share float64 `json:"share"`
			} `json:"stages"`
		} `json:"summary"`
		Loader *struct {
			Source  string    `json:"source"`
			Workers int       `json:"workers"`
			Each    []float64 `json:"worker_busy_each"`
		} `json:"loader"`
	}
	if err := json.Unmarshal(b, &snap); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if snap.Trainer == nil || snap.Trainer.Name != "live" || snap.Summary == nil || snap.Summary.Steps == 0 {
		t.Fatalf("snapshot without the trainer's steps: %s", b)
	}
	wait := 0.0
	for _, st := range snap.Summary.Stages {
		if st.Name == "data_wait" {
			wait = st.Share
		}
	}
	if wait < 0.2 {
		t.Errorf("data_wait share %.2f, want about 0.4: %s", wait, b)
	}
	if snap.Loader == nil || snap.Loader.Source != "torch" || snap.Loader.Workers != 2 || len(snap.Loader.Each) != 2 {
		t.Errorf("loader stats %+v, want 2 torch workers", snap.Loader)
	}
	waited = true
	if err := cmd.Wait(); err != nil {
		t.Errorf("pipetop run: %v; stderr:\n%s", err, stderr.String())
	}
}

// TestRunMonitorTmux runs pipetop run in a real terminal (tmux): the
// monitor opens on the script's trainer, closes when the script ends, and
// the script's output and the run summary follow.
// tmuxScreen is a tmux server of the test's own running one session,
// name, of cmd (a sh -c line) at 120x40; killed when the test ends.
type tmuxScreen struct {
	t            *testing.T
	server, name string
	log          string // a file whose text a timeout shows beside the screen, "" for none
}

// newTmuxScreen starts cmd in a tmux session (the test skips without tmux).
func newTmuxScreen(t *testing.T, name, cmd, log string) *tmuxScreen {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	ts := &tmuxScreen{t: t, server: fmt.Sprintf("pipetop-%s-%d", name, os.Getpid()), name: name, log: log}
	t.Cleanup(func() { exec.Command("tmux", "-L", ts.server, "kill-server").Run() })
	ts.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", "sh", "-c", cmd)
	return ts
}

// tmux runs a tmux command on the test's server.
func (ts *tmuxScreen) tmux(args ...string) string {
	ts.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", ts.server}, args...)...).CombinedOutput()
	if err != nil {
		ts.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// wait returns the screen once ok says so; the test fails after limit.
func (ts *tmuxScreen) wait(what string, limit time.Duration, ok func(string) bool) string {
	ts.t.Helper()
	deadline := time.Now().Add(limit)
	var s string
	for time.Now().Before(deadline) {
		s = ts.tmux("capture-pane", "-p", "-t", ts.name)
		if ok(s) {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	var log []byte
	if ts.log != "" {
		log, _ = os.ReadFile(ts.log)
	}
	ts.t.Fatalf("timed out waiting for %s; screen:\n%s\n%s", what, s, log)
	return ""
}

// runInTmux runs `pipetop run --name name` of examples/auto/loop.py for
// steps steps in a tmux pane, which then prints EXIT=status.
func runInTmux(t *testing.T, e *runEnvFor, name string, steps int) *tmuxScreen {
	t.Helper()
	script, err := filepath.Abs(example("loop.py"))
	if err != nil {
		t.Fatal(err)
	}
	return newTmuxScreen(t, name, "cd "+t.TempDir()+" && env PIPETOP_SOCKET_DIR="+e.sockets+" PIPETOP_CACHE_DIR="+e.cache+" TERM=xterm-256color "+
		e.bin+" run --no-gpu --name "+name+" -- "+debPython+" "+script+" --steps "+strconv.Itoa(steps)+"; echo EXIT=$?; sleep 60", "")
}

func TestRunMonitorTmux(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	ts := runInTmux(t, e, "tty", 100)
	wait := func(what string, ok func(string) bool) string {
		t.Helper()
		return ts.wait(what, 60*time.Second, ok)
	}
	wait("the monitor on the script", func(s string) bool {
		return strings.Contains(s, "tty pid") && strings.Contains(s, "● live") && strings.Contains(s, "data_wait")
	})
	s := wait("the summary after the script ended", func(s string) bool { return strings.Contains(s, "EXIT=") })
	for _, want := range []string{"final loss", "pipetop: tty (pid", "100 steps", "verdict: input-bound", "EXIT=0"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen after the run lacks %q:\n%s", want, s)
		}
	}
}

// TestRunRecordOneViewerTmux: pipetop run --record with its monitor on a
// terminal (tmux) watches the script on one connection: the screen, the
// recording and the end-of-run keeper share one monitor, and the script's
// publisher, counting its viewers (PIPETOP_STATS_FILE), accepted one. The
// recording holds the steps and the end-of-run summary is judged with the
// CPU readings kept on the way.
func TestRunRecordOneViewerTmux(t *testing.T) {
	e := newRunEnv(t)
	script, err := filepath.Abs(example("loop.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stats, rec := filepath.Join(dir, "stats.jsonl"), filepath.Join(dir, "run.pipetop")
	ts := newTmuxScreen(t, "onevw", "cd "+dir+" && env PIPETOP_SOCKET_DIR="+e.sockets+" PIPETOP_CACHE_DIR="+e.cache+" PIPETOP_STATS_FILE="+stats+
		" TERM=xterm-256color "+e.bin+" run --no-gpu --record "+rec+" -- "+debPython+" "+script+" --steps 300; echo EXIT=$?; sleep 60", "")
	ts.wait("the monitor on the script", 60*time.Second, func(s string) bool { return strings.Contains(s, "● live") && strings.Contains(s, "data_wait") })
	s := ts.wait("the summary after the script ended", 90*time.Second, func(s string) bool { return strings.Contains(s, "EXIT=") })
	if !strings.Contains(s, "EXIT=0") || !strings.Contains(s, "cpu:") {
		t.Errorf("screen after the run lacks EXIT=0 or the kept cpu line:\n%s", s)
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatalf("the script's publisher wrote no counters: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c struct {
			PID, Accepted int
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("counters %q: %v", line, err)
		}
		if c.Accepted != 1 {
			t.Errorf("the publisher of pid %d accepted %d viewers, want 1 (the screen, the recording and the keeper on one connection)", c.PID, c.Accepted)
		}
	}
	r, err := summary.FromFile(rec)
	if err != nil || r.Whole.Steps < 200 {
		t.Errorf("the recording holds %d steps of 300 (%v)", r.Whole.Steps, err)
	}
}

// A Ctrl-C typed in the terminal of pipetop run's monitor (a key to the
// monitor in raw mode, not a signal) stops the run: pipetop returns, and
// the script and its DataLoader workers are gone.
func TestRunCtrlCInATerminal(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	ts := runInTmux(t, e, "ctrlc", 100000)
	t.Cleanup(func() {
		for _, pid := range testkit.Marked(e.sockets) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ts.wait("the monitor on the script", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "ctrlc pid") && strings.Contains(s, "● live") && strings.Contains(s, "data_wait")
	})
	if n := len(testkit.Marked(e.sockets)); n < 4 {
		t.Fatalf("%d processes of the run before the Ctrl-C, want pipetop, the script and its 2 workers", n)
	}
	ts.tmux("send-keys", "-t", ts.name, "C-c")
	s := ts.wait("pipetop run's return", 60*time.Second, func(s string) bool { return strings.Contains(s, "EXIT=") })
	if left := testkit.Marked(e.sockets); len(left) > 0 {
		t.Errorf("pipetop run returned and left pids %v of the run running; screen:\n%s", left, s)
	}
	t.Logf("screen after the Ctrl-C:\n%s", s)
}

// pipetop run --apply says where the plan was applied, and says so when
// it reached no DataLoader (a plan written before the script changed).
func TestRunApplyReportsTheOutcome(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	script, err := filepath.Abs(filepath.Join("testdata", "tune", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	line := loaderLine(t, script)
	for _, tc := range []struct {
		line int
		want string
	}{
		{line, fmt.Sprintf("the plan was applied at train.py:%d", line)},
		{line - 1, fmt.Sprintf("the plan reached no DataLoader; no DataLoader was made at train.py:%d (the script made its DataLoaders at train.py:%d)", line-1, line)},
	} {
		plan := filepath.Join(t.TempDir(), "plan.json")
		doc := fmt.Sprintf(`{"schema": "pipetop-plan/1", "loader": {"site": "train.py:%d", "num_workers": 1}}`, tc.line)
		if err := os.WriteFile(plan, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := e.command(t, nil, "--no-tui", "--apply", plan, "--", debPython, script, "--case", "cpu_items", "--steps", "5")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pipetop run --apply: %v\n%s", err, out)
		}
		if want := "pipetop: --apply " + plan + ": " + tc.want; !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// loaderLine is the line of the training DataLoader's call in script.
func loaderLine(t *testing.T, script string) int {
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "# THE TRAINING DATALOADER") {
			return i + 1
		}
	}
	t.Fatalf("%s: no training DataLoader marked", script)
	return 0
}
