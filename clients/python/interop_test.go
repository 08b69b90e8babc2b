// Package pypublish_test checks that the Python publisher and the Go side of
// pipetop speak the same protocol: a real PyTorch loop (examples/
// pytorch_loop.py) publishes, and the Go client, the Go decoder and the
// pipetop command read it.
package pypublish_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
)

const python = "/usr/bin/python3"

// requireTorch fails the test when Debian's python3 cannot import torch,
// unless PIPETOP_NO_LIBTORCH=1 says torch is knowingly absent.
func requireTorch(t *testing.T) {
	t.Helper()
	if os.Getenv("PIPETOP_NO_LIBTORCH") == "1" {
		t.Skip("PIPETOP_NO_LIBTORCH=1: skipping the PyTorch loop")
	}
	out, err := exec.Command(python, "-c", "import torch").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import torch (apt-get install python3-torch): %v\n%s", python, err, out)
	}
}

// loop is one run of examples/pytorch_loop.py.
type loop struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed when the process has exited
	err            error         // its exit error, valid after done
}

func startLoop(t *testing.T, dir string, args ...string) *loop {
	t.Helper()
	return start(t, dir, append([]string{filepath.Join(testkit.Root(t), "examples", "pytorch_loop.py")}, args...)...)
}

// startScript runs a Python script that finds the publisher at
// sys.argv[1], its sockets in dir.
func startScript(t *testing.T, dir, script string) *loop {
	t.Helper()
	return start(t, dir, "-c", script, filepath.Join(testkit.Root(t), "clients", "python"))
}

// start runs Debian's python3 with args, its sockets in dir, until it
// exits or the test ends.
func start(t *testing.T, dir string, args ...string) *loop {
	t.Helper()
	l := &loop{done: make(chan struct{})}
	l.cmd = exec.Command(python, args...)
	l.cmd.Env = append(os.Environ(), ipc.DirEnv+"="+dir)
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", l.cmd, err)
	}
	go func() {
		l.err = l.cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			l.cmd.Process.Kill()
			<-l.done
		}
	})
	return l
}

// result is what the loop prints with --stats.
type result struct {
	FinalLoss   float64            `json:"final_loss"`
	Steps       int                `json:"steps"`
	StepMeanMs  float64            `json:"step_mean_ms"`
	StepP50Ms   float64            `json:"step_p50_ms"`
	StageMeanNs map[string]float64 `json:"stage_mean_ns"`
	Publisher   map[string]int64   `json:"publisher"`
}

// wait waits for the loop to exit cleanly and parses its --stats line.
func (l *loop) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-l.done:
		if l.err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", l.cmd, l.err, &l.stdout, &l.stderr)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s did not finish in 3 minutes\nstderr:\n%s", l.cmd, &l.stderr)
	}
	var res result
	sc := bufio.NewScanner(&l.stdout)
	var sawLoss bool
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "final loss "); ok {
			sawLoss = true
			if _, err := strconv.ParseFloat(rest, 64); err != nil {
				t.Fatalf("final loss line %q: %v", line, err)
			}
		}
		if strings.HasPrefix(line, "{") {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatalf("stats line %q: %v", line, err)
			}
		}
	}
	if !sawLoss {
		t.Fatalf("no final loss line in the output:\n%s", &l.stdout)
	}
	return res
}

// endpoint waits until the loop's socket shows up in dir.
func (l *loop) endpoint(t *testing.T, dir, name string) ipc.Endpoint {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		eps, err := ipc.ListDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range eps {
			if ep.Name == name && ep.PID == l.cmd.Process.Pid {
				return ep
			}
		}
		select {
		case <-l.done:
			t.Fatalf("loop exited before its socket appeared: %v\n%s", l.err, &l.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no socket for %q in %s after a minute", name, dir)
	return ipc.Endpoint{}
}

// received is what a Go viewer read from one connection, until EOF.
type received struct {
	hello  ipc.Hello
	names  []string
	window *stage.StepRing
	steps  []stage.Record
	events []ipc.Event
}

// readAll reads frames with the Go client until the trainer closes.
func readAll(t *testing.T, conn *ipc.Conn) *received {
	t.Helper()
	h := conn.Hello()
	r := &received{hello: h, names: h.Stages, window: stage.NewStepRing(h.Stages, 1<<16)}
	for {
		f, err := conn.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return r
			}
			t.Fatalf("after %d steps: %v", len(r.steps), err)
		}
		switch f.Type {
		case ipc.TypeStages:
			t.Fatalf("stage list changed to %v; the loop declares the canonical stages", f.Stages)
		case ipc.TypeSteps:
			for i := range f.Steps {
				r.window.Add(&f.Steps[i])
			}
			r.steps = append(r.steps, f.Steps...)
		case ipc.TypeEvent:
			r.events = append(r.events, *f.Event)
		}
	}
}

func dial(t *testing.T, path string) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPythonLoopInterop(t *testing.T) {
	requireTorch(t)
	dir := testkit.SocketDir(t)
	const steps = 200
	l := startLoop(t, dir, "--steps", strconv.Itoa(steps), "--name", "py-interop", "--wait-viewers", "1", "--stats")
	ep := l.endpoint(t, dir, "py-interop")
	got := readAll(t, dial(t, ep.Path))
	res := l.wait(t)

	h := got.hello
	if h.Role != "trainer" || h.Name != "py-interop" || h.PID != l.cmd.Process.Pid || h.HostPID <= 0 || h.StartNs <= 0 {
		t.Errorf("hello = %+v", h)
	}
	if strings.Join(h.Stages, ",") != strings.Join(stage.Canonical, ",") {
		t.Errorf("stages = %v, want %v", h.Stages, stage.Canonical)
	}
	var cfg map[string]any
	if err := json.Unmarshal(h.Config, &cfg); err != nil || cfg["model"] != "mlp" {
		t.Errorf("config %s: %v", h.Config, err)
	}
	if len(got.steps) != steps {
		t.Fatalf("received %d steps, want %d", len(got.steps), steps)
	}
	checkSteps(t, got.steps, 64)
	if len(got.events) != 1 || got.events[0].Kind != "phase" {
		t.Errorf("events = %+v, want the one phase event", got.events)
	}
	last := got.steps[steps-1]
	if !last.HasLoss || math.Abs(float64(last.Loss)-res.FinalLoss) > 1e-5*math.Max(1, res.FinalLoss) {
		t.Errorf("last published loss %v, printed final loss %v", last.Loss, res.FinalLoss)
	}
	checkMeans(t, got.window.Summarize(0), res.StageMeanNs)
	if res.Publisher["published"] != steps || res.Publisher["overflow"] != 0 || res.Publisher["dropped"] != 0 {
		t.Errorf("publisher stats %v", res.Publisher)
	}
	if _, err := os.Stat(ep.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s left behind after a clean exit: %v", ep.Path, err)
	}
}

// checkSteps checks numbering, shapes and the other-stage arithmetic.
func checkSteps(t *testing.T, steps []stage.Record, batch int32) {
	t.Helper()
	for i, s := range steps {
		var sum int64
		for _, v := range s.CPU[:s.NumStages] {
			sum += v
		}
		switch {
		case s.Step != int64(i):
			t.Fatalf("step %d numbered %d", i, s.Step)
		case s.NumStages != len(stage.Canonical) || s.HasGPU():
			t.Fatalf("step %d: cpu %v gpu %v", i, s.CPU[:s.NumStages], s.GPU[:s.NumStages])
		case sum != s.WallNs():
			t.Fatalf("step %d: stage times add up to %d, wall is %d", i, sum, s.WallNs())
		case s.Samples != batch:
			t.Fatalf("step %d: %d samples, want %d", i, s.Samples, batch)
		}
		if i > 0 && s.StartNs < steps[i-1].EndNs {
			t.Fatalf("step %d starts at %d before step %d ends at %d", i, s.StartNs, i-1, steps[i-1].EndNs)
		}
	}
}

// checkMeans compares the stage means pipetop computes from the frames with
// the loop's own independent timing of each stage.
func checkMeans(t *testing.T, sum stage.Summary, own map[string]float64) {
	t.Helper()
	for _, name := range stage.Canonical[:6] {
		st := sum.Stage(name)
		want, ok := own[name]
		if st == nil || !ok {
			t.Errorf("stage %s: summary %v, loop %v", name, st, ok)
			continue
		}
		// The loop's clock wraps the publisher's span, so it reads a few
		// microseconds more per step, never less.
		if st.Mean > want || want-st.Mean > 0.05*want+20e3 {
			t.Errorf("stage %s: pipetop mean %.0f ns, loop measured %.0f ns", name, st.Mean, want)
		}
	}
	for _, name := range []string{stage.Forward, stage.Backward, stage.Optim} {
		if st := sum.Stage(name); st == nil || st.Mean <= 0 {
			t.Errorf("stage %s has no time: %+v", name, st)
		}
	}
	var shares float64
	for _, st := range sum.Stages {
		shares += st.Share
	}
	if math.Abs(shares-1) > 1e-6 {
		t.Errorf("stage shares add up to %f, want 1", shares)
	}
}

// TestNeverReadingGoViewer attaches a Go viewer that never reads next to one
// that does: the loop runs to the end, the stuck viewer's socket buffer
// fills (the publisher saw it blocked), and the reading viewer loses
// nothing. What the stuck viewer costs the loop's steps is measured by
// clients/python/bench_publish.py, against a publisher without it.
func TestNeverReadingGoViewer(t *testing.T) {
	requireTorch(t)
	if testing.Short() {
		t.Skip("-short: skipping the 3,000-step loop")
	}
	dir := testkit.SocketDir(t)
	const steps = 3000
	args := []string{"--steps", strconv.Itoa(steps), "--batch", "4", "--hidden", "16", "--features", "8", "--stats"}
	l := startLoop(t, dir, append(args, "--name", "py-stuck", "--wait-viewers", "2")...)
	ep := l.endpoint(t, dir, "py-stuck")
	stuck := dialStuck(t, ep.Path)
	defer stuck.Close()
	got := readAll(t, dial(t, ep.Path))
	res := l.wait(t)
	if len(got.steps) != steps {
		t.Fatalf("the reading viewer received %d steps, want %d", len(got.steps), steps)
	}
	checkSteps(t, got.steps, 4)
	// ipc.ListDir's liveness probe is a connection too: accepted counts it.
	if res.Publisher["blocked"] < 1 || res.Publisher["accepted"] < 2 {
		t.Errorf("publisher stats %v: want the stuck viewer blocked", res.Publisher)
	}
	t.Logf("step mean %.3f ms (p50 %.3f) with a never-reading viewer", res.StepMeanMs, res.StepP50Ms)
}

// dialStuck connects with a tiny receive buffer, sends a valid hello and
// never reads.
func dialStuck(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte(`{"type":"hello","v":1,"hello":{"role":"viewer"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPipetopSeesPythonLoop runs the pipetop command against the loop:
// `pipetop ls` lists it and `pipetop --json` reports its steps and stages.
func TestPipetopSeesPythonLoop(t *testing.T) {
	requireTorch(t)
	bin := testkit.Bin(t, "pipetop")
	dir := testkit.SocketDir(t)
	l := startLoop(t, dir, "--steps", "1000000", "--name", "py-cli", "--wait-viewers", "1")
	l.endpoint(t, dir, "py-cli")
	env := append(os.Environ(), ipc.DirEnv+"="+dir, "NO_COLOR=1")
	ls := runPipetop(t, bin, env, "ls")
	if !strings.Contains(ls, "py-cli") || !strings.Contains(ls, strconv.Itoa(l.cmd.Process.Pid)) {
		t.Errorf("pipetop ls does not list py-cli (pid %d):\n%s", l.cmd.Process.Pid, ls)
	}
	out := runPipetop(t, bin, env, "--json", "--interval", "3s") // the loop starts its loader workers once attached
	var snap snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("pipetop --json is not JSON: %v\n%s", err, out)
	}
	if snap.Trainer.Name != "py-cli" || snap.Trainer.PID != l.cmd.Process.Pid ||
		strings.Join(snap.Trainer.Stages, ",") != strings.Join(stage.Canonical, ",") {
		t.Errorf("pipetop --json trainer = %+v", snap.Trainer)
	}
	if snap.Summary.Steps < 1 || snap.Summary.LastStep < int64(snap.Summary.Steps)-1 {
		t.Errorf("pipetop --json saw %d steps, last step %d", snap.Summary.Steps, snap.Summary.LastStep)
	}
	var shares float64
	for _, st := range snap.Summary.Stages {
		shares += st.Share
		if (st.Name == stage.Forward || st.Name == stage.Backward || st.Name == stage.Optim) && st.Mean <= 0 {
			t.Errorf("pipetop --json: stage %s mean %.0f ns", st.Name, st.Mean)
		}
	}
	if len(snap.Summary.Stages) != len(stage.Canonical) || math.Abs(shares-1) > 1e-6 {
		t.Errorf("pipetop --json stages %+v (shares add up to %f)", snap.Summary.Stages, shares)
	}
	l.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-l.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not stop on SIGINT")
	}
}

// snapshot is the part of `pipetop --json` (docs/pipetop.md) checked here.
type snapshot struct {
	Trainer struct {
		Name   string   `json:"name"`
		PID    int      `json:"pid"`
		Stages []string `json:"stages"`
	} `json:"trainer"`
	Summary stage.Summary `json:"summary"`
}

func runPipetop(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pipetop %s: %v\n%s", strings.Join(args, " "), err, &stderr)
	}
	return string(out)
}

// edgeScript publishes awkward values: unicode names, a custom stage list
// that grows past 16, losses outside float32, a huge sample count, control
// characters in events and an unencodable config value.
const edgeScript = `
import sys, time
sys.path.insert(0, sys.argv[1])
from pipetop_publish import Publisher
pub = Publisher("edge/ü", config={"ü": [1, 2.5, None], "obj": object()}, stages=["forward"])
while pub.stats()["viewers"] < 1:
    time.sleep(0.01)
for i, loss in enumerate([0.5, 1e39, float("nan"), 1e-45, -3.0, None]):
    with pub.stage("décodé"):
        with pub.stage("forward"):
            pass
    with pub.stage("s%d" % i):
        pass
    pub.event("log", 'line\nbreak "quoted" \u2028 \x00')
    pub.step(samples=1 << 40 if i == 1 else i, loss=loss)
for i in range(20):
    with pub.stage("x%d" % i):
        pass
pub.step()
pub.close()
`

func TestEdgeValuesDecodeInGo(t *testing.T) {
	dir := testkit.SocketDir(t)
	l := startScript(t, dir, edgeScript)
	stderr := &l.stderr
	ep := l.endpoint(t, dir, "edge_ü")
	conn := dial(t, ep.Path)
	names := conn.Hello().Stages
	if strings.Join(names, ",") != "forward,other" {
		t.Errorf("hello stages %v", names)
	}
	var steps []stage.Record
	var events int
	for {
		f, err := conn.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the Go decoder refused a frame after %d steps: %v\n%s", len(steps), err, stderr)
		}
		switch f.Type {
		case ipc.TypeStages:
			names = f.Stages
		case ipc.TypeSteps:
			for _, s := range f.Steps {
				if s.NumStages != len(names) {
					t.Errorf("step %d has %d cpu times for %d stages %v", s.Step, s.NumStages, len(names), names)
				}
			}
			steps = append(steps, f.Steps...)
		case ipc.TypeEvent:
			events++
		}
	}
	<-l.done
	if l.err != nil {
		t.Fatalf("edge script: %v\n%s", l.err, stderr)
	}
	if len(steps) != 7 || events < 6 || len(names) != stage.MaxStages || names[len(names)-1] != stage.Other {
		t.Fatalf("%d steps, %d events, final stages %v", len(steps), events, names)
	}
	var losses []string
	for _, s := range steps[:6] {
		if !s.HasLoss {
			losses = append(losses, "-")
		} else {
			losses = append(losses, strconv.FormatFloat(float64(s.Loss), 'g', -1, 32))
		}
	}
	if got := strings.Join(losses, " "); got != "0.5 - - 1e-45 -3 -" {
		t.Errorf("losses %q", got)
	}
	if steps[1].Samples != math.MaxInt32 {
		t.Errorf("samples %d, want the int32 maximum", steps[1].Samples)
	}
}

// TestVersionMismatchWithPythonPublisher runs the Python publisher speaking
// a newer and an older protocol than the Go viewer: the viewer says which
// side to upgrade, the publisher refuses the viewer and logs it once.
func TestVersionMismatchWithPythonPublisher(t *testing.T) {
	root := testkit.Root(t)
	script := `import sys, time
import pipetop_publish as pp
from pipetop_publish import wire
wire.PROTOCOL_VERSION = int(sys.argv[1])  # the version lives in the wire module
with pp.Publisher(name="v" + sys.argv[1]) as pub:
    print(pub.path, flush=True)
    sys.stdin.read()
`
	for _, tc := range []struct {
		version         int
		viewer, refusal string
	}{
		{2, "speaks protocol 2; this pipetop speaks 1 — upgrade pipetop",
			"this viewer speaks protocol 1, the trainer speaks 2 — upgrade pipetop"},
		{0, "speaks protocol 0; this pipetop speaks 1 — upgrade the trainer's publisher",
			"this viewer speaks protocol 1, the trainer speaks 0 — upgrade the trainer's publisher"},
	} {
		t.Run(fmt.Sprintf("publisher v%d", tc.version), func(t *testing.T) {
			cmd := exec.Command(python, "-c", script, strconv.Itoa(tc.version))
			cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "clients", "python"), ipc.DirEnv+"="+testkit.SocketDir(t))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			path, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatalf("publisher: %v\n%s", err, &stderr)
			}
			path = strings.TrimSpace(path)
			for range 3 {
				_, err := ipc.Dial(context.Background(), path)
				var ae *ipc.AttachError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.viewer) || !strings.Contains(err.Error(), fmt.Sprintf("trainer v%d (pid %d, ", tc.version, cmd.Process.Pid)) {
					t.Fatalf("Dial: %v, want %q", err, tc.viewer)
				}
			}
			stdin.Close() // the publisher exits, flushing its log
			if err := cmd.Wait(); err != nil {
				t.Fatalf("publisher: %v\n%s", err, &stderr)
			}
			if log := stderr.String(); strings.Count(log, "refused a viewer") != 1 || !strings.Contains(log, tc.refusal) {
				t.Fatalf("publisher log %q: want the refusal %q logged once", log, tc.refusal)
			}
		})
	}
}
