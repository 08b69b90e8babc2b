package ipc

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// goLoader is a loader frame as the Go server writes it, every field set
// but the zarr list.
func goLoader() []byte {
	l := stage.LoaderStats{TimeNs: 1796417997417174297, Dataset: "data/demo.zarr", Workers: 2, Batch: 64,
		SamplesPerSec: 1283.25, WorkerBusy: 0.61, QueueDepth: 3, QueueCap: 4, CacheHitRate: 0.9, ReadAmp: 1.25,
		BytesRead: 1 << 40, BytesDecoded: 3 << 40, BytesUsed: 2 << 40, ReadNs: 9e12, DecodeNs: 8e12, CollateNs: 7e12, Errors: 1,
		Source: "torch", BatchesPerSec: 20.05, WorkerBusyEach: []float64{0.5, 0.72}, Prefetch: 2, PinMemory: true, Cores: 16}
	return bytes.TrimSuffix(appendJSON(nil, Frame{Type: TypeLoader, Loader: &l}), []byte("\n"))
}

// goProgress is a progress frame as the Go server writes it.
func goProgress() []byte {
	p := stage.Progress{TimeNs: 5e18, Step: 42, StepStartNs: 4e18, Stage: stage.DataWait, SinceNs: 4.5e18, Done: 42}
	return bytes.TrimSuffix(appendJSON(nil, Frame{Type: TypeProgress, Progress: &p}), []byte("\n"))
}

// The loader and progress frames of both publishers decode without
// encoding/json, to the same frame; any other form falls back to it and
// decodes (or fails) as before.
func TestFastFlatFrames(t *testing.T) {
	for _, c := range []struct {
		name string
		line []byte
		fast bool
	}{
		{"go loader", goLoader(), true},
		{"go progress", goProgress(), true},
		{"python progress", []byte(`{"type":"progress","progress":{"t":5,"step":-1,"done":0}}`), true},
		{"python progress in a stage", []byte(`{"type":"progress","progress":{"t":9,"step":3,"done":3,"step_t0":7,"stage":"forward","since":8}}`), true},
		{"python torch loader", []byte(`{"type":"loader","loader":{"source":"torch","workers":2,"batch":64,"batches_per_sec":19.5,"samples_per_sec":1248.0,"worker_busy":0.5,"worker_busy_each":[0.4,0.6],"queue_depth":0,"queue_cap":4,"prefetch_factor":2,"pin_memory":false,"cores":2,"t":17}}`), true},
		{"python torch loader between epochs", []byte(`{"type":"loader","loader":{"source":"torch","workers":2,"length":8,"persistent_workers":true,"worker_starts":20,"worker_start_ns":1500000000,"site":"train.py:30","t":17}}`), true},
		{"empty lists and objects", []byte(`{"type":"loader","loader":{"worker_busy_each":[]}}`), true},
		{"a repeated key: the last one", []byte(`{"type":"progress","progress":{"t":1,"t":2,"step":0,"done":0}}`), true},
		{"zarr arrays", []byte(`{"type":"loader","loader":{"t":1,"zarr":[{"path":"a.zarr","bytes_read":5}]}}`), false},
		{"hdf5 datasets", []byte(`{"type":"loader","loader":{"t":1,"hdf5":[{"file":"/d/a.h5","path":"/img","chunks":[60,84,84,3],"read_amp":60}]}}`), false},
		{"video streams", []byte(`{"type":"loader","loader":{"t":1,"video":[{"file":"/d/cam0.mp4","gop":250,"frames_decoded":109,"frames_returned":1,"read_amp":109.0}]}}`), false},
		{"an escaped string", []byte(`{"type":"loader","loader":{"dataset":"a\"b"}}`), false},
		{"a non-ASCII string", []byte(`{"type":"loader","loader":{"dataset":"données"}}`), false},
		{"null", []byte(`{"type":"loader","loader":{"dataset":null}}`), false},
		{"a key in capitals", []byte(`{"type":"progress","progress":{"T":1,"step":0,"done":0}}`), false},
		{"an unknown key", []byte(`{"type":"progress","progress":{"later":1,"step":0,"done":0}}`), false},
		{"spaces", []byte(`{"type":"progress","progress":{"t": 1,"step":0,"done":0}}`), false},
		{"a fraction in an integer", []byte(`{"type":"loader","loader":{"workers":1.5}}`), false},
		{"a number out of range", []byte(`{"type":"loader","loader":{"read_amp":1e999}}`), false},
		{"trailing bytes", []byte(`{"type":"progress","progress":{"t":1,"step":0,"done":0}} `), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Compact(c.line); got != c.fast {
				t.Errorf("Compact = %v, want %v", got, c.fast)
			}
			got, err := DecodeFrame(c.line)
			var want Frame
			werr := json.Unmarshal(c.line, &want)
			if werr == nil {
				werr = want.validate()
			}
			if (err == nil) != (werr == nil) {
				t.Fatalf("DecodeFrame error %v, encoding/json %v", err, werr)
			}
			if err != nil {
				return
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(&want)
			if string(a) != string(b) {
				t.Errorf("decoded\n%s\nencoding/json\n%s", a, b)
			}
		})
	}
}

// FuzzFastFlat checks the loader and progress decoders against
// encoding/json: whenever a fast path accepts a line, the general decoder
// must agree.
func FuzzFastFlat(f *testing.F) {
	f.Add(goLoader())
	f.Add(goProgress())
	f.Add([]byte(`{"type":"progress","progress":{"t":9,"step":3,"done":3,"step_t0":7,"stage":"forward","since":8}}`))
	f.Add([]byte(`{"type":"loader","loader":{"worker_busy_each":[0.25,1e-3],"pin_memory":true,"dataset":"x"}}`))
	f.Add([]byte(`{"type":"loader","loader":{"source":"torch","workers":2,"length":8,"persistent_workers":false,"worker_starts":20,"worker_start_ns":1500000000,"site":"train.py:30"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		agreeWithJSON(t, data, decodeLoaderFast)
		agreeWithJSON(t, data, decodeProgressFast)
	})
}

// BenchmarkDecodeProgress is one progress frame, as a viewer of 64 ranks
// decodes 64 a second.
func BenchmarkDecodeProgress(b *testing.B) {
	line := goProgress()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeFrame(line); err != nil {
			b.Fatal(err)
		}
	}
}
