package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/summary"
	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/torch"
)

// distRun is a `pipetrain train --nproc N` launcher under test, with its
// output collected line by line.
type distRun struct {
	t       *testing.T
	cmd     *exec.Cmd
	sockets string
	mu      sync.Mutex
	lines   []string
	seen    chan string
	done    chan error
}

var (
	distOnce          sync.Once
	distBin, distData string
	distErr           error
)

// TestMain runs the tests, then removes distSetup's dataset.
func TestMain(m *testing.M) {
	code := m.Run()
	if distData != "" {
		os.RemoveAll(filepath.Dir(distData))
	}
	os.Exit(code)
}

// distSetup finds the binary and generates a small dataset once for these
// tests.
func distSetup(t *testing.T) (bin, data, shim string) {
	t.Helper()
	shim, err := torch.FindShim()
	if err != nil {
		t.Fatalf("%v (make test builds it)", err)
	}
	distOnce.Do(func() {
		var dir string
		if dir, distErr = testkit.BinDirErr(); distErr != nil {
			return
		}
		distBin = filepath.Join(dir, "pipetrain")
		if dir, distErr = os.MkdirTemp("", "pipetrain-dist"); distErr != nil {
			return
		}
		distData = filepath.Join(dir, "d.zarr")
		distErr = dataset.Generate(dataset.GenOptions{Out: distData, Episodes: 4, Frames: 40, ChunkFrames: 1, Size: 32, Seed: 5})
	})
	if distErr != nil {
		t.Fatal(distErr)
	}
	return distBin, distData, shim
}

func startDist(t *testing.T, bin string, args ...string) *distRun {
	t.Helper()
	r := &distRun{t: t, sockets: filepath.Join(t.TempDir(), "s"), seen: make(chan string, 4096), done: make(chan error, 1)}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+r.sockets)
	out, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout = r.cmd.Stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
			select {
			case r.seen <- sc.Text():
			default:
			}
		}
		r.done <- r.cmd.Wait()
	}()
	return r
}

func (r *distRun) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// waitLine waits for an output line with prefix.
func (r *distRun) waitLine(prefix string, timeout time.Duration) {
	r.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-r.seen:
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-deadline:
			r.t.Fatalf("no line %q within %s:\n%s", prefix, timeout, r.log())
		}
	}
}

// wait waits for the launcher to exit and returns its error.
func (r *distRun) wait(timeout time.Duration) error {
	r.t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(timeout):
		r.t.Fatalf("launcher still running after %s:\n%s", timeout, r.log())
		return nil
	}
}

// rankPID finds a rank's pid from its socket name NAME-rankR.PID.sock.
func (r *distRun) rankPID(name string, rank int) int {
	r.t.Helper()
	m, _ := filepath.Glob(filepath.Join(r.sockets, fmt.Sprintf("%s-rank%d.*.sock", name, rank)))
	if len(m) != 1 {
		r.t.Fatalf("rank %d's socket: found %v", rank, m)
	}
	pid, err := strconv.Atoi(strings.Split(filepath.Base(m[0]), ".")[1])
	if err != nil {
		r.t.Fatal(err)
	}
	return pid
}

var (
	checksumRE = regexp.MustCompile(`\[rank (\d)\] rank \d: parameter checksum ([0-9a-f]+) at step (\d+)`)
	lossRE     = regexp.MustCompile(`\[rank 0\] step +\d+  loss ([0-9.]+)`)
	stoppedRE  = regexp.MustCompile(`\[rank (\d)\] stopped by signal at step (\d+)`)
)

// checksums returns each rank's final "checksum@step".
func checksums(t *testing.T, log string, world int) []string {
	t.Helper()
	got := make([]string, world)
	for _, m := range checksumRE.FindAllStringSubmatch(log, -1) {
		r, _ := strconv.Atoi(m[1])
		got[r] = m[2] + "@" + m[3]
	}
	for r, s := range got {
		if s == "" {
			t.Fatalf("rank %d printed no checksum:\n%s", r, log)
		}
	}
	return got
}

// TestTwoRanksTrainStopAndResume: two Gloo ranks train in step (equal
// parameter checksums) and the loss falls; Ctrl-C on the launcher stops
// both at the same step with a checkpoint; resume works with two ranks and
// is refused with one.
func TestTwoRanksTrainStopAndResume(t *testing.T) {
	bin, data, shim := distSetup(t)
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"train", "--nproc", "2", "--data", data, "--preset", "tiny", "--batch", "4", "--threads", "1",
		"--workers", "1", "--lr", "1e-3", "--shim", shim, "--ckpt", ckpt, "--log-every", "1", "--dist-timeout", "20s", "--name", "dist"}

	rec := filepath.Join(t.TempDir(), "run.pipetop")
	r := startDist(t, bin, append(args, "--max-steps", "24", "--record", rec)...)
	if err := r.wait(120 * time.Second); err != nil {
		t.Fatalf("2 ranks: %v\n%s", err, r.log())
	}
	log := r.log()
	checkRankRecording(t, rec, log)
	sums := checksums(t, log, 2)
	if sums[0] != sums[1] || !strings.HasSuffix(sums[0], "@24") {
		t.Fatalf("ranks diverged: checksums %v\n%s", sums, log)
	}
	var losses []float64
	for _, m := range lossRE.FindAllStringSubmatch(log, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		losses = append(losses, v)
	}
	if len(losses) != 24 {
		t.Fatalf("%d rank-0 losses, want 24:\n%s", len(losses), log)
	}
	first, last := meanF(losses[:6]), meanF(losses[18:])
	t.Logf("rank 0 loss: first 6 steps %.4f, last 6 %.4f", first, last)
	if last > first/1.3 {
		t.Fatalf("loss fell from %.4f to %.4f, want at least 1.3x lower", first, last)
	}
	for _, want := range []string{"[rank 0] rank 0 of 2 (run pipetrain-", "gloo process group, shard of", "pipetop socket:", "dist-rank1."} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}

	// Resume with two ranks, then Ctrl-C the launcher.
	r = startDist(t, bin, append(args, "--resume")...)
	r.waitLine("[rank 0] step     27", 60*time.Second)
	r.cmd.Process.Signal(syscall.SIGINT)
	if err := r.wait(30 * time.Second); err != nil {
		t.Fatalf("after SIGINT: %v\n%s", err, r.log())
	}
	log = r.log()
	for _, want := range []string{"[rank 0] resumed at step 24", "[rank 1] resumed at step 24", "all 2 ranks stopped cleanly", "[rank 0] checkpoint: step"} {
		if !strings.Contains(log, want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
	stops := stoppedRE.FindAllStringSubmatch(log, -1)
	if len(stops) != 2 || stops[0][2] != stops[1][2] {
		t.Fatalf("ranks did not stop at the same step: %v\n%s", stops, log)
	}
	if sums := checksums(t, log, 2); sums[0] != sums[1] {
		t.Fatalf("ranks diverged after resume: %v", sums)
	}

	// A different world size is refused, naming both sizes.
	out, err := exec.Command(bin, "train", "--data", data, "--preset", "tiny", "--batch", "4", "--threads", "1", "--workers", "1",
		"--shim", shim, "--ckpt", ckpt, "--resume", "--no-serve", "--max-steps", "100").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "written by a run of 2 rank(s), this run has 1") {
		t.Fatalf("resume with 1 rank: %v\n%s", err, out)
	}
}

// checkRankRecording: --record with --nproc 2 leaves one recording holding
// all 24 steps of each rank, and no per-rank files.
func checkRankRecording(t *testing.T, rec, log string) {
	t.Helper()
	if !strings.Contains(log, "recorded 2 ranks to "+rec) {
		t.Fatalf("no merged recording reported:\n%s", log)
	}
	r, err := summary.FromFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ranks) != 2 || r.Damage != "" {
		t.Fatalf("recording: %s, ranks %d (damage %q)", r.Describe(), len(r.Ranks), r.Damage)
	}
	for _, rr := range r.Ranks {
		if rr.Whole.Steps != 24 {
			t.Errorf("rank %d: %d steps recorded, want 24", rr.Rank, rr.Whole.Steps)
		}
		if _, err := os.Stat(recording.RankPath(rec, rr.Rank)); err == nil {
			t.Errorf("rank %d's own file was left behind", rr.Rank)
		}
	}
}

func meanF(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestDeadOrHungRankStopsTheOthers: rank 1 killed, or stopped (SIGSTOP:
// alive but hung), makes rank 0 fail within --dist-timeout with an error
// that names rank 1, and the launcher exits naming it too.
func TestDeadOrHungRankStopsTheOthers(t *testing.T) {
	bin, data, shim := distSetup(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		want []string
		// one of these says what rank 0 saw: the stop may land before
		// rank 1 reaches the next step's all-reduce (rank 0 names it) or
		// inside it (a loaded CI box: rank 0 says every rank reached the
		// step, and the launcher names rank 1 as the one that hung)
		oneOf []string
	}{
		{"killed", syscall.SIGKILL, []string{"[launcher] rank 1 (pid", "was killed by signal killed", "rank 1 (pid"}, nil},
		{"hung", syscall.SIGSTOP, []string{"Timed out", "rank 1 did not stop on its own"},
			[]string{"rank 1 (last at step", "so a rank failed or hung inside the collective"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startDist(t, bin, "train", "--nproc", "2", "--data", data, "--preset", "tiny", "--batch", "4", "--threads", "1",
				"--workers", "1", "--shim", shim, "--log-every", "1", "--dist-timeout", "2s", "--name", "fault")
			r.waitLine("[rank 1] step      3", 60*time.Second)
			pid := r.rankPID("fault", 1)
			if err := syscall.Kill(pid, tc.sig); err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(pid, syscall.SIGKILL)
			start := time.Now()
			err := r.wait(30 * time.Second)
			el := time.Since(start)
			log := r.log()
			if err == nil {
				t.Fatalf("launcher exited 0 after rank 1 was %s:\n%s", tc.name, log)
			}
			// Rank 0 must fail on its own within the 2 s timeout (plus
			// slack for a loaded machine), before the launcher's grace
			// period (timeout + 5 s) ends.
			if !strings.Contains(log, "[rank 0] pipetrain: train: step") {
				t.Fatalf("rank 0 did not fail by itself:\n%s", log)
			}
			for _, want := range tc.want {
				if !strings.Contains(log, want) {
					t.Fatalf("log lacks %q:\n%s", want, log)
				}
			}
			if len(tc.oneOf) > 0 && !slices.ContainsFunc(tc.oneOf, func(s string) bool { return strings.Contains(log, s) }) {
				t.Fatalf("log has none of %q:\n%s", tc.oneOf, log)
			}
			t.Logf("rank 1 %s: launcher exited after %s", tc.name, el.Round(time.Millisecond))
		})
	}
}
