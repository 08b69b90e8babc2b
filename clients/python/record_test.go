package pypublish_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/summary"
)

// recordScript is a stdlib-only loop with no viewer attached: with
// PIPETOP_RECORD set, every step still reaches the file.
const recordScript = `
import sys, time
sys.path.insert(0, sys.argv[1])
from pipetop_publish import Publisher
pub = Publisher("py-rec", stages=["data_wait", "forward"])
for i in range(40):
    with pub.stage("data_wait"):
        time.sleep(0.002)
    with pub.stage("forward"):
        time.sleep(0.004)
    pub.step(samples=8, loss=1.0 / (i + 1))
pub.close()
`

// TestPythonRecording: PIPETOP_RECORD makes the Python publisher write a
// recording that pipetop's reader summarizes: all steps, the planted
// shares, no damage.
func TestPythonRecording(t *testing.T) {
	dir := testkit.SocketDir(t)
	rec := filepath.Join(t.TempDir(), "py.pipetop")
	cmd := exec.Command(python, "-c", recordScript, filepath.Join(testkit.Root(t), "clients", "python"))
	cmd.Env = append(os.Environ(), ipc.DirEnv+"="+dir, "PIPETOP_RECORD="+rec)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python loop: %v\n%s", err, out)
	}
	r, err := summary.FromFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "py-rec" || r.Whole.Steps != 40 || r.Damage != "" {
		t.Fatalf("recording: %s (damage %q), want 40 steps of py-rec", r.Describe(), r.Damage)
	}
	fw := r.Whole.Stage(stage.Forward)
	if fw == nil || fw.Share < 0.45 || fw.Share > 0.8 {
		t.Errorf("forward share %+v, planted about 4 of 6 ms", fw)
	}
}

// TestPythonRecordingOfARank: under torchrun every rank sees the same
// PIPETOP_RECORD; each writes its own FILE-rankR file, entries marked with
// its rank.
func TestPythonRecordingOfARank(t *testing.T) {
	dir := testkit.SocketDir(t)
	rec := filepath.Join(t.TempDir(), "py.pipetop")
	cmd := exec.Command(python, "-c", recordScript, filepath.Join(testkit.Root(t), "clients", "python"))
	cmd.Env = append(os.Environ(), ipc.DirEnv+"="+dir, "PIPETOP_RECORD="+rec,
		"WORLD_SIZE=2", "RANK=1", "TORCHELASTIC_RUN_ID=job7")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python loop: %v\n%s", err, out)
	}
	if _, err := os.Stat(rec); err == nil {
		t.Errorf("rank 1 wrote %s, the file every rank would share", rec)
	}
	r, err := summary.FromFile(filepath.Join(filepath.Dir(rec), "py-rank1.pipetop"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ranks) != 1 || r.Ranks[0].Rank != 1 || r.Whole.Steps != 40 || r.Damage != "" {
		t.Fatalf("rank 1's recording: %s, ranks %+v (damage %q)", r.Describe(), r.Ranks, r.Damage)
	}
}
