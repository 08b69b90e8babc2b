package diagnosis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/torch"
)

// requireDebTorch skips unless Debian's Python imports torch.
func requireDebTorch(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (scripts/install-deps.sh installs python3-torch): %v\n%s", python, err, out)
	}
}

// ddpJob is the part of pipetop run's job summary the tests read.
type ddpJob struct {
	Schema    string `json:"schema"`
	WorldSize int    `json:"world_size"`
	Ranks     []struct {
		Rank   int    `json:"rank"`
		Steps  int64  `json:"steps"`
		Host   string `json:"host"`
		Stages []struct {
			Name  string  `json:"name"`
			Share float64 `json:"share"`
		} `json:"stages"`
	} `json:"ranks"`
	Straggler *verdict.Verdict `json:"straggler"`
	OverTime  []struct {
		Straggler *verdict.Verdict `json:"straggler"`
	} `json:"over_time"`
	Path string `json:"path"`
}

// selfMeasured is the line examples/ddp/train.py prints about itself.
type selfMeasured struct {
	Rank      int     `json:"rank"`
	Steps     int64   `json:"steps"`
	CommShare float64 `json:"comm_share"`
}

// runDDP runs examples/ddp/launch.sh (2 ranks started with RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT set by hand) under pipetop run
// --json and returns its job summary and what the script measured.
func runDDP(t *testing.T, args ...string) (ddpJob, []selfMeasured, string) {
	t.Helper()
	sum := t.TempDir()
	cmd := exec.Command(filepath.Join(bins, "pipetop"), append([]string{"run", "--no-tui", "--json", "--", "sh", "../../examples/ddp/launch.sh", "2"}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHON="+python, "MASTER_PORT="+strconv.Itoa(testkit.FreePort(t)), "PIPETOP_SUMMARY_DIR="+sum,
		"PIPETOP_SOCKET_DIR="+t.TempDir(), "PIPETOP_CACHE_DIR="+t.TempDir(), "PIPETOP_STACKS_HZ=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pipetop run: %v\n%s", err, stderr.String())
	}
	var out []json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != 1 {
		t.Fatalf("pipetop run --json: %v, %d documents, want the one job summary\n%s\n%s", err, len(out), stdout.String(), stderr.String())
	}
	var job ddpJob
	if err := json.Unmarshal(out[0], &job); err != nil || job.Schema != "pipetop-job/1" {
		t.Fatalf("job summary: %v, schema %q\n%s", err, job.Schema, out[0])
	}
	if m, _ := filepath.Glob(filepath.Join(sum, "pipetop-summary-*.json")); len(m) != 2 {
		t.Errorf("%d per-rank summary files, want 2 beside the job's", len(m))
	}
	var self []selfMeasured
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, `{"rank"`) {
			var m selfMeasured
			if err := json.Unmarshal([]byte(line), &m); err == nil {
				self = append(self, m)
			}
		}
	}
	if len(self) != 2 {
		t.Fatalf("the script measured %d ranks, want 2:\n%s", len(self), stderr.String())
	}
	if self[0].Rank > self[1].Rank {
		self[0], self[1] = self[1], self[0]
	}
	return job, self, stderr.String()
}

// TestDDPStragglerThroughPipetopRun: plain PyTorch DDP scripts (no pipetop
// import), 2 real Gloo ranks, rank 1 planted 30 ms slower a step in one
// stage: one job summary names rank 1 and that stage over the run and in
// every interval; a balanced run names nobody. Step counts match the
// script's and each rank's comm share is within 10 points of the script's
// own measurement.
func TestDDPStragglerThroughPipetopRun(t *testing.T) {
	testkit.Serial(t)
	if testing.Short() {
		t.Skip("starts PyTorch ranks")
	}
	requireDebTorch(t)
	for _, tc := range []struct {
		planted, stage, phrase string
	}{
		{"data_wait", stage.DataWait, "its data_wait is"},
		{"forward", stage.Forward, "its forward is"},
		{"backward", stage.Backward, "its backward compute is"},
		{"none", "", ""},
	} {
		t.Run(tc.planted, func(t *testing.T) {
			job, self, log := runDDP(t, "--steps", "40", "--slow-stage", tc.planted)
			if len(job.Ranks) != 2 || job.WorldSize != 2 {
				t.Fatalf("job %+v", job)
			}
			for i, r := range job.Ranks {
				if r.Steps != self[i].Steps {
					t.Errorf("rank %d: %d steps, the script counted %d", i, r.Steps, self[i].Steps)
				}
				comm := 0.0
				for _, st := range r.Stages {
					if st.Name == stage.Comm {
						comm = st.Share
					}
				}
				t.Logf("rank %d: %d steps (script %d), comm %.1f %% (script %.1f %%)", i, r.Steps, self[i].Steps, 100*comm, 100*self[i].CommShare)
				if d := comm - self[i].CommShare; d > 0.10 || d < -0.10 {
					t.Errorf("rank %d: comm %.1f %%, the script measured %.1f %%", i, 100*comm, 100*self[i].CommShare)
				}
			}
			v := job.Straggler
			if tc.planted == "none" {
				if v != nil {
					t.Fatalf("balanced run flagged: %s", v)
				}
				for _, w := range job.OverTime {
					if w.Straggler != nil {
						t.Errorf("balanced run flagged over time: %s", w.Straggler)
					}
				}
				return
			}
			if v == nil || v.Kind != verdict.Straggler || v.Rank == nil || *v.Rank != 1 || v.Stage != tc.stage {
				t.Fatalf("straggler %+v, want rank 1 in %s\n%s", v, tc.stage, log)
			}
			if !strings.Contains(v.Headline, tc.phrase) || !strings.Contains(v.Headline, "on "+job.Ranks[1].Host) {
				t.Errorf("headline %q lacks %q or the host", v.Headline, tc.phrase)
			}
			for i, w := range job.OverTime {
				if w.Straggler == nil || *w.Straggler.Rank != 1 {
					t.Errorf("interval %d: %+v, want rank 1", i, w.Straggler)
				}
			}
			t.Logf("%s", v)
		})
	}
}

// rankSocket is one rank's pid and socket path.
type rankSocket struct {
	pid  int
	path string
}

// rankPIDs waits until the sockets in dir name n ranks of a run, and
// returns each rank's pid and socket.
func rankPIDs(t *testing.T, dir string, n int) map[int]rankSocket {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pids := map[int]rankSocket{}
		m, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
		for _, path := range m {
			h, err := ipc.ProbeHello(context.Background(), path, time.Second)
			if err == nil && h.Rank != nil {
				pids[*h.Rank] = rankSocket{h.PID, path}
			}
		}
		if len(pids) == n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %d ranks in %s: have %v", n, dir, pids)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// viewVerdict is pipetop attach SPEC --json's verdict about the run in
// dir after collecting for interval (plain pipetop --json without a spec).
func viewVerdict(dir, spec string, interval time.Duration) (*verdict.Verdict, string, error) {
	args := []string{"--json", "--no-gpu", "--interval", interval.String()}
	if spec != "" {
		args = append([]string{"attach", spec}, args...)
	}
	cmd := exec.Command(filepath.Join(bins, "pipetop"), args...)
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+dir)
	out, err := cmd.Output()
	if err != nil {
		return nil, string(out), fmt.Errorf("pipetop --json: %w", err)
	}
	var snap struct {
		Verdict *verdict.Verdict `json:"verdict"`
	}
	if err := json.Unmarshal(out, &snap); err != nil {
		return nil, string(out), err
	}
	return snap.Verdict, string(out), nil
}

// awaitSteady waits until the rank at path is judged on its steps
// (neither starting nor warming up): on a loaded machine the ranks' first
// steps wait seconds for each other, and a stop among them reads as a
// slow start (one CI run's viewer read comm-bound, its steps 3.5 s).
func awaitSteady(t *testing.T, dir, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, out, err := viewVerdict(dir, path, time.Second)
		if err == nil && v != nil && v.Kind != verdict.Starting && v.Kind != verdict.WarmingUp {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rank at %s not judged on its steps after 60 s: %v %v\n%s", path, v, err, out)
		}
	}
}

// checkStopped stops rank 1 of the run in dir with SIGSTOP, with one
// viewer attached before the stop and one after (given rank 0's socket, or
// with bare, no spec: the only run whose sockets answer): both must name
// rank 1 as stopped, and rank 0 as waiting, never rank 0 as the culprit.
func checkStopped(t *testing.T, dir string, pids map[int]rankSocket, bare bool) {
	t.Helper()
	type res struct {
		v   *verdict.Verdict
		out string
		err error
	}
	awaitSteady(t, dir, pids[0].path)
	before := make(chan res, 1)
	go func() {
		// 9 s: 7 s after the stop, enough on a loaded machine for the
		// stopped-rank rule to tell a stop from a slow step.
		v, out, err := viewVerdict(dir, pids[0].path, 9*time.Second)
		before <- res{v, out, err}
	}()
	time.Sleep(2 * time.Second) // the viewer has attached and seen steps
	if err := syscall.Kill(pids[1].pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pids[1].pid, syscall.SIGCONT)
	b := <-before
	time.Sleep(500 * time.Millisecond)
	spec := pids[0].path
	if bare {
		spec = ""
	}
	av, aout, aerr := viewVerdict(dir, spec, 2*time.Second)
	for _, r := range []struct {
		who string
		res
	}{{"viewer attached before the stop", b}, {"viewer attached after the stop", res{av, aout, aerr}}} {
		if r.err != nil || r.v == nil {
			t.Errorf("%s: %v\n%s", r.who, r.err, r.out)
			continue
		}
		v := r.v
		if v.Kind != verdict.RankStopped || v.Rank == nil || *v.Rank != 1 {
			t.Errorf("%s: %s, want rank 1 named as stopped", r.who, v)
			continue
		}
		if !strings.Contains(v.Headline, "waiting for it: rank 0 in ") {
			t.Errorf("%s: headline %q does not say rank 0 waits", r.who, v.Headline)
		}
		t.Logf("%s: %s", r.who, v)
	}
}

// startDDP starts examples/ddp/launch.sh's 2 ranks under the automatic
// instrumentation in their own socket directory, which it returns; the
// test's cleanup kills them.
func startDDP(t *testing.T, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	pub, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{"../../examples/ddp/launch.sh", "2"}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHON="+python+" -m pipetop_publish.auto", "PYTHONPATH="+pub, "MASTER_PORT="+strconv.Itoa(testkit.FreePort(t)),
		"PIPETOP_SOCKET_DIR="+dir, "PIPETOP_SUMMARY=0", "PIPETOP_STACKS_HZ=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return dir, logs
}

// TestDDPStragglerLive: the live view (pipetop --json, attached to the
// run) names rank 1, planted slow in forward, with its host.
func TestDDPStragglerLive(t *testing.T) {
	testkit.Serial(t)
	if testing.Short() {
		t.Skip("starts PyTorch ranks")
	}
	requireDebTorch(t)
	dir, logs := startDDP(t, "--steps", "100000", "--slow-stage", "forward")
	rankPIDs(t, dir, 2)
	time.Sleep(time.Second)
	v, out, err := viewVerdict(dir, "", 3*time.Second)
	if err != nil || v == nil {
		t.Fatalf("%v\n%s\n%s", err, out, logs)
	}
	host, _ := os.Hostname()
	if v.Kind != verdict.Straggler || v.Rank == nil || *v.Rank != 1 || v.Stage != stage.Forward || !strings.Contains(v.Headline, "on "+host) {
		t.Fatalf("verdict %s, want straggler rank 1 in forward on %s", v, host)
	}
	t.Logf("%s", v)
}

// TestStoppedPyTorchRankNamed: rank 1 of a 2-rank PyTorch DDP run stopped
// with SIGSTOP is named, with rank 0 waiting in comm.
func TestStoppedPyTorchRankNamed(t *testing.T) {
	testkit.Concurrent(t)
	if testing.Short() {
		t.Skip("starts PyTorch ranks")
	}
	requireDebTorch(t)
	dir, logs := startDDP(t, "--steps", "100000", "--base-ms", "5")
	checkStopped(t, dir, rankPIDs(t, dir, 2), true)
	if t.Failed() {
		t.Logf("ranks' output:\n%s", logs.String())
	}
}

// TestStoppedPipetrainRankNamed: the same for two pipetrain --nproc 2
// ranks (Gloo over libtorch), with a collective timeout far beyond the test.
func TestStoppedPipetrainRankNamed(t *testing.T) {
	testkit.Concurrent(t)
	if testing.Short() {
		t.Skip("starts pipetrain ranks")
	}
	shim, err := torch.FindShim()
	if err != nil {
		t.Fatalf("%v (make test builds it)", err)
	}
	data := filepath.Join(t.TempDir(), "d.zarr")
	if err := dataset.Generate(dataset.GenOptions{Out: data, Episodes: 4, Frames: 100, ChunkFrames: 1}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(bins, "pipetrain"), "train", "--nproc", "2", "--data", data, "--preset", "tiny", "--batch", "4",
		"--threads", "1", "--workers", "1", "--shim", shim, "--dist-timeout", "120s", "--name", "stop")
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	checkStopped(t, dir, rankPIDs(t, dir, 2), false)
	if t.Failed() {
		t.Logf("pipetrain output:\n%s", logs.String())
	}
}
