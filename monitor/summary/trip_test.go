package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestScriptTextBatchLine: the end-of-run text has a batch: line with the
// bytes a batch carried from the workers, the receive time and the float
// images that could be uint8.
func TestScriptTextBatchLine(t *testing.T) {
	s := &Script{Name: "train.py", Loader: &stage.LoaderStats{Source: "torch", Workers: 2, Trip: &stage.BatchTrip{
		Batches: 60, BytesPerBatch: 24 << 20, ReceiveNs: 1500000, Tensors: []stage.TripTensor{
			{Key: "['cam0']", DType: "float32", Shape: []int{32, 128, 128, 3}, Bytes: 12 << 20, Uint8Factor: 4, Uint8Scale: 1},
			{Key: "['cam1']", DType: "float32", Shape: []int{32, 128, 128, 3}, Bytes: 12 << 20, Uint8Factor: 4, Uint8Scale: 1}}}}}
	var b bytes.Buffer
	WriteScriptText(&b, s, "run.json")
	want := "  batch: 24.0 MiB a batch from the workers to the main process, received in 1.5 ms (60 batches); batch['cam0'], batch['cam1'] float32 where uint8 would do (4x the bytes, 18.0 MiB a batch)\n"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("text lacks %q:\n%s", want, b.String())
	}
}
