package diagnosis

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// update re-records the recorded fixtures of testdata/ from live runs.
var update = flag.Bool("update", false, "re-record testdata's recorded fixtures from live runs (go test ./tests/diagnosis -run TestX -update, where TestX names the fixture)")

// recorded is testkit.Recorded of this package: a plant whose point is a
// verdict over the run's own timeline (not the CPU it shares) is judged
// from a run recorded once.
func recorded(t *testing.T, name string, record func(t *testing.T, path string)) string {
	t.Helper()
	return testkit.Recorded(t, *update, "./tests/diagnosis", name, record)
}

// recordPlant starts a plant and records it with pipetop record for d,
// from its first step.
func recordPlant(start func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error), d time.Duration) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		cmd, logs, err := start(t, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := awaitSocket(cmd.Env, 20*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, logs)
		}
		rec := exec.Command(filepath.Join(bins, "pipetop"), "record", "-o", path, "--duration", d.String())
		rec.Env = cmd.Env
		if out, err := rec.CombinedOutput(); err != nil {
			t.Fatalf("pipetop record: %v\n%s\nplant's stderr:\n%s", err, out, logs)
		}
	}
}

// replayVerdict is the verdict pipetop replay --json gives of a recording
// at at (from its start) over window.
func replayVerdict(t *testing.T, path string, at time.Duration, window string) verdict.Verdict {
	t.Helper()
	out, err := exec.Command(filepath.Join(bins, "pipetop"), "replay", path, "--json", "--at", at.String(), "--window", window).Output()
	if err != nil {
		t.Fatalf("pipetop replay %s: %v", path, err)
	}
	var snap struct {
		Verdict *verdict.Verdict `json:"verdict"`
	}
	if err := json.Unmarshal(out, &snap); err != nil || snap.Verdict == nil {
		t.Fatalf("pipetop replay --json of %s: %v", path, fmt.Errorf("no verdict (%v):\n%s", err, out))
	}
	return *snap.Verdict
}
