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

// python is Debian's interpreter; the publisher needs only its stdlib.
const python = "/usr/bin/python3"

// pyLoop is a training loop instrumented with the stdlib publisher; the
// planted behaviour comes from the environment.
const pyLoop = `
import os, time, sys
sys.path.insert(0, os.environ["PUBLISHER_DIR"])
import pipetop_publish as pp

start_delay = float(os.environ.get("START_DELAY", "0"))
every = int(os.environ.get("EVERY", "0"))
spike = float(os.environ.get("SPIKE", "0.15"))
hang_at = float(os.environ.get("HANG_AT", "0"))  # seconds after the start
hang_stage = os.environ.get("HANG_STAGE", "comm")
wait = float(os.environ.get("WAIT", "0.0003"))
began = time.monotonic()
with pp.Publisher("pyloop", {"kind": "test"}) as pub:
    step = 0
    while True:
        with pub.stage("data_wait"):
            if step == 0 and start_delay:
                time.sleep(start_delay)
            time.sleep(spike if every and step % every == every - 1 else wait)
        if hang_at and time.monotonic() - began >= hang_at:
            with pub.stage(hang_stage):
                time.sleep(3600)
        with pub.stage("forward"):
            time.sleep(0.006)
        with pub.stage("backward"):
            time.sleep(0.004)
        pub.step(samples=8)
        step += 1
`

func pyScript(env ...string) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
	return func(t *testing.T, _ string) (*exec.Cmd, *bytes.Buffer, error) {
		if _, err := os.Stat(python); err != nil {
			return nil, nil, fmt.Errorf("%s: %w (scripts/install-deps.sh installs it)", python, err)
		}
		script := filepath.Join(t.TempDir(), "loop.py")
		if err := os.WriteFile(script, []byte(pyLoop), 0o644); err != nil {
			return nil, nil, err
		}
		pubDir, err := filepath.Abs("../../clients/python")
		if err != nil {
			return nil, nil, err
		}
		return launch(t, append([]string{"PUBLISHER_DIR=" + pubDir}, env...), python, script)
	}
}

func pythonScenarios() []scenario {
	return []scenario{
		{name: "python/slow start in data_wait", start: pyScript("START_DELAY=60"),
			after: 2 * time.Second, interval: 2500 * time.Millisecond, kind: verdict.Starting, stage: stage.DataWait,
			headline: []string{"in data_wait for"}, next: []string{"loader"}},
		{name: "python/periodic input stalls", start: pyScript("EVERY=8"),
			after: 2500 * time.Millisecond, interval: time.Second, kind: verdict.InputStalls, stage: stage.DataWait,
			headline: []string{"every 8th step waits"}, next: []string{"prefetch", "every 8 steps"}},
		{name: "python/hang in an all-reduce", start: pyScript("HANG_AT=1.5", "HANG_STAGE=comm"),
			after: 500 * time.Millisecond, interval: 8 * time.Second, kind: verdict.Stalled, stage: "comm",
			headline: []string{"stuck in comm"}, next: []string{"rank"}},
		{name: "python/healthy compute-bound is calm", start: pyScript(),
			after: 1500 * time.Millisecond, interval: time.Second, kind: verdict.ComputeBound, stage: stage.Forward,
			next: []string{"input keeps up"}},
	}
}
