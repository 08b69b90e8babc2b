package diagnosis

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/torch"
)

// pipetrainThrashing trains the tiny model on zarr-default-chunked data
// with a decoded-chunk cache far smaller than the data, decoding inline:
// every batch decodes whole 100-frame chunk rows for a few frames.
func pipetrainThrashing(t *testing.T, _ string) (*exec.Cmd, *bytes.Buffer, error) {
	shim, err := torch.FindShim()
	if err != nil {
		return nil, nil, fmt.Errorf("%w (make test builds it)", err)
	}
	data := filepath.Join(t.TempDir(), "auto.zarr")
	if err := dataset.Generate(dataset.GenOptions{Out: data, Episodes: 4, Frames: 100, ChunkFrames: 0}); err != nil {
		return nil, nil, err
	}
	return launch(t, nil, filepath.Join(bins, "pipetrain"), "train", "--data", data, "--preset", "tiny", "--batch", "4",
		"--threads", "1", "--workers", "0", "--cache-mb", "1", "--shim", shim, "--name", "thrash")
}

func pipetrainScenarios() []scenario {
	return []scenario{
		{name: "pipetrain/thrashing loader on zarr-default chunks", start: pipetrainThrashing,
			after: 8 * time.Second, interval: 4 * time.Second, window: "all", kind: verdict.InputBound, also: []verdict.Kind{verdict.ModerateInput, verdict.Starting}, stage: stage.DataWait,
			next: []string{"rechunk", "--chunk-frames 1"}},
	}
}
