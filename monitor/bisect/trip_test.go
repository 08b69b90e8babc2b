package bisect

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// TestWriteLoaderSources: the loader phase's table names each source it
// read, whatever its format, and what a batch carried from the workers.
func TestWriteLoaderSources(t *testing.T) {
	l := &stage.LoaderStats{Workers: 2, WorkerBusy: 0.9, ReadAmp: 60,
		Trip: &stage.BatchTrip{Batches: 9, BytesPerBatch: 24 << 20, ReceiveNs: 2e6,
			Tensors: []stage.TripTensor{{Key: "['image']", DType: "float32", Bytes: 24 << 20, Uint8Factor: 4, Uint8Scale: 1}}},
		HDF5: []stage.HDF5Dataset{{File: "/d/demos.hdf5", Path: "/data/demo_0/obs/agentview_image", Shape: []int{60, 84, 84, 3},
			Chunks: []int{60, 84, 84, 3}, Filter: "lzf", Calls: 100, BytesReturned: 100 * 21168, BytesDecoded: 100 * 21168 * 60, ReadAmp: 60}},
		Video: []stage.VideoStream{{File: "/d/cam0.mp4", Codec: "h264", Width: 96, Height: 96, GOP: 250, Opens: 10, Calls: 10,
			FramesDecoded: 1088, FramesReturned: 10, ReadAmp: 108.8}},
	}
	r := Report{Phases: []verdict.PhaseResult{{Name: verdict.PhaseLoader, Status: verdict.PhaseOK, Steps: 9, StepsPerSec: 3, SamplesPerSec: 24, Loader: l}}}
	var b bytes.Buffer
	r.WriteLoader(&b)
	out := b.String()
	if !strings.HasPrefix(out, "loader: 2 workers busy 90 %, read amplification 60.0x\n  hdf5: ") {
		t.Errorf("the loader lines start:\n%s", out)
	}
	words := strings.Join(strings.Fields(out), " ") // as the lines wrap
	for _, want := range []string{
		"hdf5: /data/demo_0/obs/agentview_image in demos.hdf5 chunks 60x84x84x3 lzf",
		"read amplification 60.0x",
		"batch: 24.0 MiB a batch from the workers to the main process",
		"batch['image'] float32 where uint8 would do (4x the bytes",
		"video: /d/cam0.mp4 h264 96x96, a keyframe every 250 frames",
	} {
		if !strings.Contains(words, want) {
			t.Errorf("the loader lines lack %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if len(line) > 80 {
			t.Errorf("a line over 80 columns: %q", line)
		}
	}
	r.Phases[0].Loader = &stage.LoaderStats{Workers: 2}
	b.Reset()
	r.WriteLoader(&b)
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("a loader that read nothing counted printed more than its line:\n%s", b.String())
	}
}

// TestLoaderTextWithoutWorkers: a loader without workers or counted reads
// is said so, not "0 workers busy 0 %, read amplification 0.0x".
func TestLoaderTextWithoutWorkers(t *testing.T) {
	if got := loaderText(&stage.LoaderStats{}); got != "no workers (batches load on the training thread)" {
		t.Errorf("got %q", got)
	}
	if got := loaderText(&stage.LoaderStats{Workers: 2, WorkerBusy: 0.5, ReadAmp: 3}); got != "2 workers busy 50 %, read amplification 3.0x" {
		t.Errorf("got %q", got)
	}
}
