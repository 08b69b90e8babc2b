package diagnosis

import (
	"bytes"
	"context"
	"encoding/json"
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
)

// spawnRun is pipetop run --no-tui ARGS of examples/ddp/spawn.py (2 ranks
// that torch.multiprocessing.spawn starts, Gloo on the CPU), with its own
// socket, summary and cache directories; it is not started yet.
type spawnRun struct {
	cmd            *exec.Cmd
	sockets        string
	stdout, stderr bytes.Buffer
}

func newSpawnRun(t *testing.T, pipetopArgs []string, scriptArgs ...string) *spawnRun {
	t.Helper()
	requireDebTorch(t)
	r := &spawnRun{sockets: t.TempDir()}
	args := append(append([]string{"run", "--no-tui"}, pipetopArgs...), "--", python, "../../examples/ddp/spawn.py")
	r.cmd = exec.Command(filepath.Join(bins, "pipetop"), append(args, scriptArgs...)...)
	r.cmd.Env = append(os.Environ(), "MASTER_PORT="+strconv.Itoa(testkit.FreePort(t)), "PIPETOP_SUMMARY_DIR="+t.TempDir(),
		"PIPETOP_SOCKET_DIR="+r.sockets, "PIPETOP_CACHE_DIR="+t.TempDir(), "PIPETOP_STACKS_HZ=0")
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		killMarked(r.sockets)
	})
	return r
}

// killMarked kills what a failed test left behind.
func killMarked(dir string) {
	for _, pid := range testkit.Marked(dir) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// The ranks torch.multiprocessing.spawn starts are one run with ranks: a
// viewer attaches both as one run, and pipetop run prints one job summary
// for them (launcher spawn), not two summaries of one name.
func TestSpawnRanksAreOneRun(t *testing.T) {
	testkit.Concurrent(t)
	if testing.Short() {
		t.Skip("starts PyTorch ranks")
	}
	r := newSpawnRun(t, []string{"--json"}, "--seconds", "14")
	pids := rankPIDs(t, r.sockets, 2)
	cmd := exec.Command(filepath.Join(bins, "pipetop"), "--json", "--no-gpu", "--interval", "1s")
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+r.sockets)
	out, err := cmd.Output()
	var snap struct {
		Ranks []struct {
			Rank int `json:"rank"`
		} `json:"ranks"`
	}
	if err != nil || json.Unmarshal(out, &snap) != nil || len(snap.Ranks) != 2 {
		t.Errorf("pipetop --json without a spec: %v, ranks %+v; want the run's 2 ranks\n%s", err, snap.Ranks, out)
	}
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("pipetop run: %v\n%s", err, r.stderr.String())
	}
	var docs []struct {
		Schema    string `json:"schema"`
		Launcher  string `json:"launcher"`
		Run       string `json:"run"`
		WorldSize int    `json:"world_size"`
		Ranks     []struct {
			Rank  int   `json:"rank"`
			PID   int   `json:"pid"`
			Steps int64 `json:"steps"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal(r.stdout.Bytes(), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("pipetop run --json: %v, %d documents, want one job summary\n%s\n%s", err, len(docs), r.stdout.String(), r.stderr.String())
	}
	j := docs[0]
	if j.Schema != "pipetop-job/1" || j.Launcher != "spawn" || j.WorldSize != 2 || len(j.Ranks) != 2 || !strings.HasPrefix(j.Run, "127.0.0.1:") {
		t.Fatalf("job summary %+v, want pipetop-job/1 of the spawn launcher's 2 ranks of run 127.0.0.1:PORT", j)
	}
	for i, rk := range j.Ranks {
		if rk.Rank != i || rk.Steps < 10 || rk.PID != pids[i].pid {
			t.Errorf("rank line %+v, want rank %d (pid %d) with its steps", rk, i, pids[i].pid)
		}
	}
	t.Logf("pipetop run said:\n%s", r.stderr.String())
}

// awaitStep waits until the trainer at socket path publishes a step: its
// DataLoader workers, which spawn starts afresh, have imported torch.
func awaitStep(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		<-ctx.Done()
		c.Close()
	}()
	for {
		f, err := c.Next()
		if err != nil {
			t.Fatalf("no step from %s: %v", path, err)
		}
		if f.Type == ipc.TypeSteps && len(f.Steps) > 0 {
			return
		}
	}
}

// A Ctrl-C of pipetop run stops every process of the run (the script, its
// 2 spawned ranks and their DataLoader workers) before pipetop returns.
func TestSpawnCtrlCLeavesNothing(t *testing.T) {
	testkit.Concurrent(t)
	if testing.Short() {
		t.Skip("starts PyTorch ranks")
	}
	r := newSpawnRun(t, nil, "--seconds", "600")
	for _, rk := range rankPIDs(t, r.sockets, 2) {
		awaitStep(t, rk.path)
	}
	if n := len(testkit.Marked(r.sockets)); n < 5 {
		t.Fatalf("%d processes of the run before the Ctrl-C, want the script, 2 ranks and their workers", n)
	}
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("pipetop run did not return within 60 s of a Ctrl-C\n%s", r.stderr.String())
	}
	if left := testkit.Marked(r.sockets); len(left) > 0 {
		t.Errorf("pipetop run returned and left pids %v of the run running\n%s", left, r.stderr.String())
	}
	t.Logf("pipetop run said:\n%s", r.stderr.String())
}
