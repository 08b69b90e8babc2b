package bisect

import (
	"bytes"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestWriteTrip: the loader phase's table says what a batch carried from
// the workers and names float images that could be uint8.
func TestWriteTrip(t *testing.T) {
	var b bytes.Buffer
	writeTrip(&b, &stage.BatchTrip{Batches: 9, BytesPerBatch: 24 << 20, ReceiveNs: 2e6,
		Tensors: []stage.TripTensor{{Key: "['image']", DType: "float32", Bytes: 24 << 20, Uint8Factor: 4, Uint8Scale: 1}}})
	if want := "batch: 24.0 MiB from the workers, received in 2.0 ms; float images where uint8 would do: 4x the bytes\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	writeTrip(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("a loader without trip counters printed %q", b.String())
	}
}
