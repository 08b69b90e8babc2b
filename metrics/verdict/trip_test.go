package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// cams is a batch of 32 samples of 4 cameras of 128x128x3 images in
// itemsize-byte values (flagged: could be uint8 by factor itemsize) and
// a window of normalized joint states (16 steps of 14 float32).
func cams(itemsize, factor int) []stage.TripTensor {
	dtype := map[int]string{1: "uint8", 4: "float32", 8: "float64"}[itemsize]
	var out []stage.TripTensor
	for c := 0; c < 4; c++ {
		x := stage.TripTensor{Key: "['cam" + string(rune('0'+c)) + "']", DType: dtype, Shape: []int{32, 128, 128, 3}, Bytes: int64(32 * 128 * 128 * 3 * itemsize)}
		if factor > 1 {
			x.Uint8Factor, x.Uint8Scale = factor, 1
		}
		out = append(out, x)
	}
	return append(out, stage.TripTensor{Key: "['joints']", DType: "float32", Shape: []int{32, 16, 14}, Bytes: 32 * 16 * 14 * 4})
}

// tripLoader is a DataLoader with 2 workers busy busy of the time,
// delivering bps batches a second of tensors, each received in recvMs.
func tripLoader(busy, bps, recvMs float64, tensors []stage.TripTensor) *stage.LoaderStats {
	var bytes int64
	for _, x := range tensors {
		bytes += x.Bytes
	}
	return &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: busy, BatchesPerSec: bps, Batch: 32, Prefetch: 2, QueueCap: 4,
		Trip: &stage.BatchTrip{Batches: 200, BytesPerBatch: bytes, TensorsPerBatch: int64(len(tensors)), ReceiveNs: int64(recvMs * 1e6), Tensors: tensors}}
}

// TestTripAdvice plants float32 and float64 camera images that could be
// uint8 behind an input-bound loop, a main process that spends a large
// share of the time receiving batches, and the controls: the same images
// as uint8, a float tensor that is not images (normalized joint states,
// flagged by nobody), float images too small to matter, and a quick
// receive.
func TestTripAdvice(t *testing.T) {
	const start = int64(1e18)
	waiting := run(start, 200, steadyTimes(30*ms1)).Summarize(0) // input-bound: 75 % data_wait
	joints := []stage.TripTensor{{Key: "['state']", DType: "float32", Shape: []int{32, 16, 14}, Bytes: 32 * 16 * 14 * 4}}
	small := append(cams(1, 0)[:4], stage.TripTensor{Key: "['thumb']", DType: "float32", Shape: []int{32, 16, 16, 1}, Bytes: 32 * 16 * 16 * 4, Uint8Factor: 4, Uint8Scale: 1})
	scaled := cams(4, 4)
	for i := range scaled[:4] {
		scaled[i].Uint8Scale = 255
	}
	for _, tc := range []struct {
		name    string
		loader  *stage.LoaderStats
		want    []string
		notWant []string
	}{
		{"float32 images 0..255: named with 4x and the fix", tripLoader(0.95, 20, 2, cams(4, 4)),
			[]string{"workers send 24.0 MiB per batch to the main process", "4 image tensors float32 where uint8 would do: 4x the bytes, 18.0 MiB a batch more than uint8",
				"batch['cam0'], batch['cam1'], batch['cam2'], batch['cam3']", "send uint8 and convert in the training step instead (batch['cam0'].float() on the device)",
				"then, if the workers still cannot keep up, 2 workers are busy 95 %"},
			[]string{"joints", "receiving"}},
		{"float64 images 0..255: 8x", tripLoader(0.5, 10, 2, cams(8, 8)),
			[]string{"float64 where uint8 would do: 8x the bytes", "batch['cam0'].float() on the device"}, nil},
		{"multiples of 1/255: div_(255)", tripLoader(0.5, 10, 2, scaled),
			[]string{"4x the bytes", "x.mul(255).round().byte()", "batch['cam0'].float().div_(255) on the device"}, nil},
		{"float images and a slow receive: both named", tripLoader(0.5, 40, 12, cams(4, 4)),
			[]string{"4x the bytes", "the main process spends 12.0 ms receiving each batch from the workers (48 % of the time)"}, nil},
		{"uint8 images: not flagged", tripLoader(0.95, 20, 2, cams(1, 0)), []string{"raise num_workers"}, []string{"uint8", "receiving"}},
		{"normalized joint states: not flagged", tripLoader(0.95, 20, 1, joints), []string{"raise num_workers"}, []string{"uint8", "receiving"}},
		{"a small float thumbnail beside uint8 cameras: not worth naming", tripLoader(0.95, 20, 1, small), []string{"raise num_workers"}, []string{"uint8 would do"}},
		{"a slow receive alone", tripLoader(0.3, 50, 10, cams(1, 0)),
			[]string{"the main process spends 10.0 ms receiving each batch from the workers (50 % of the time), 6.0 MiB a batch in 5 tensors or arrays", "stack per-sample tensors in __getitem__ or collate_fn"},
			[]string{"uint8 would do"}},
		{"a quick receive: not named", tripLoader(0.3, 50, 2, cams(1, 0)), []string{"busy only 30 %"}, []string{"receiving"}},
		{"the planted control's receive (21 %): not named", tripLoader(0.35, 75.9, 2.8, cams(1, 0)), []string{"busy only 35 %"}, []string{"receiving"}},
		{"the planted 256 tensors' receive (89 %): named", tripLoader(0.3, 5.2, 170, cams(1, 0)), []string{"spends 170 ms receiving each batch from the workers (88 % of the time)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Inputs{Summary: waiting, Loader: tc.loader, Live: true})
			if v.Kind != InputBound {
				t.Fatalf("kind = %s (%s), want input-bound", v.Kind, v)
			}
			for _, c := range tc.want {
				if !strings.Contains(v.Next, c) {
					t.Errorf("advice %q lacks %q", v.Next, c)
				}
			}
			for _, c := range tc.notWant {
				if strings.Contains(v.Next, c) {
					t.Errorf("advice %q has %q", v.Next, c)
				}
			}
		})
	}
}

// TestTripAdviceNeedsTheInput: float images behind a loop that does not
// wait on data are not named (the trip is not the bottleneck).
func TestTripAdviceNeedsTheInput(t *testing.T) {
	const start = int64(1e18)
	compute := run(start, 200, steadyTimes(ms1/2)).Summarize(0)
	v := Judge(Inputs{Summary: compute, Loader: tripLoader(0.5, 20, 2, cams(4, 4)), Live: true})
	if strings.Contains(v.String(), "uint8") {
		t.Fatalf("verdict %q names uint8 on a loop that does not wait on data", v)
	}
}

// TestTripCounts: the bytes a uint8 copy would save, and what
// BatchTrip lists as uint8-able.
func TestTripCounts(t *testing.T) {
	b := stage.BatchTrip{Tensors: cams(4, 4)}
	if got := len(b.Uint8()); got != 4 {
		t.Fatalf("Uint8() = %d tensors, want 4", got)
	}
	if got, want := b.Uint8Saved(), int64(4*32*128*128*3*3); got != want {
		t.Fatalf("Uint8Saved() = %d, want %d", got, want)
	}
}
