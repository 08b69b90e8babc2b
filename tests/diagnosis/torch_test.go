package diagnosis

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// autoScript runs an unmodified PyTorch script of examples/auto with the
// automatic instrumentation (python -m pipetop_publish.auto), as pipetop
// run would, so that its stack samples and loader statistics are live.
func autoScript(script string, args ...string) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
	return func(t *testing.T, _ string) (*exec.Cmd, *bytes.Buffer, error) {
		if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("%s cannot import torch (scripts/install-deps.sh installs python3-torch): %v\n%s", python, err, out)
		}
		pubDir, err := filepath.Abs("../../clients/python")
		if err != nil {
			return nil, nil, err
		}
		path, err := filepath.Abs(filepath.Join("../../examples/auto", script))
		if err != nil {
			return nil, nil, err
		}
		env := []string{"PYTHONPATH=" + pubDir, "PIPETOP_SUMMARY=0", "PYTHONDONTWRITEBYTECODE=1"}
		if _, err := os.Stat(path); err != nil {
			return nil, nil, err
		}
		return launch(t, env, python, append([]string{"-m", "pipetop_publish.auto", path}, args...)...)
	}
}

// torchScenarios plant the loader's two ways of making the loop wait in
// plain PyTorch scripts: workers slower than the loop, which hand over
// their batches in turn (a steadily slow loader, whatever the pattern of
// the waits), and one slow batch in 20 that the worker it falls to
// absorbs over the 20 steps (a periodic stall deeper prefetch hides). Their
// workers sleep in a function of their own, which the verdict names from
// the live stack samples. The synthetic Go publisher plants the first with
// a pipetrain-style loader frame (workers busy 97 %, no torch fields).
func torchScenarios() []scenario {
	return []scenario{
		{name: "go/saturated workers in turn: input-bound, not stalls",
			start: synthetic("-every", "2", "-spike", "60ms", "-stages", "data_wait=0.2ms,forward=4ms", "-loader-busy", "0.97", "-loader-amp", "1"),
			after: 2 * time.Second, interval: time.Second, kind: verdict.InputBound, stage: stage.DataWait,
			headline: []string{"the 2 workers, busy 97 %, hand over their batches in turn (every 2nd step waits)"},
			next:     []string{"all 2 loader workers are busy 97 %"}},
		{name: "torch/2 saturated workers: input-bound", start: autoScript("in_turn.py", "--workers", "2", "--batch-ms", "200"),
			after: 3 * time.Second, interval: 1500 * time.Millisecond, kind: verdict.InputBound, stage: stage.DataWait,
			headline: []string{"waits on data_wait", "in `read_from_storage` at"}, next: []string{"2 workers are busy", "raise num_workers"}},
		{name: "torch/4 saturated workers in turn: input-bound, not stalls", start: autoScript("in_turn.py", "--workers", "4", "--batch-ms", "200"),
			after: 3 * time.Second, interval: 1500 * time.Millisecond, kind: verdict.InputBound, stage: stage.DataWait,
			headline: []string{"the 4 workers, busy", "hand over their batches in turn", "in `read_from_storage` at"},
			next:     []string{"4 workers are busy", "raise num_workers"}},
		{name: "torch/one slow batch in 20: input stalls", start: autoScript("in_turn.py", "--workers", "2", "--stall-every", "20", "--stall-ms", "400", "--step-ms", "40"),
			after: 5 * time.Second, interval: 3 * time.Second, kind: verdict.InputStalls, stage: stage.DataWait,
			headline: []string{"input stalls", "in `read_from_storage` at"}, next: []string{"deepen the prefetch"}},
	}
}
