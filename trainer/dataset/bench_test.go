package dataset

import (
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/trainer/zarr"
)

// cameraFrames renders n 128x128 frames of camera 0 and compresses each
// with codec, as `data gen --chunk-frames 1` stores them.
func cameraFrames(b *testing.B, n int, codecName string) (zarr.Codec, [][]byte) {
	b.Helper()
	codec, err := zarr.NewCodec(codecName)
	if err != nil {
		b.Fatal(err)
	}
	o := GenOptions{Episodes: 1, Frames: n, Seed: 1}
	states, _ := simulate(o)
	cam := newCamera(0, 128, 128, 1)
	frame := make([]byte, 128*128*3)
	out := make([][]byte, n)
	for t := range n {
		cam.render(t, states[t*StateDim:(t+1)*StateDim], frame)
		if out[t], err = codec.Encode(nil, frame, 1); err != nil {
			b.Fatal(err)
		}
	}
	return codec, out
}

// BenchmarkDecodeCeiling measures single-core decode speed of generated
// camera frames (blosc-lz4, zarr's default codec): the ceiling a loader
// decoding 1-frame chunks cannot beat. MB/s is decoded bytes per second.
func BenchmarkDecodeCeiling(b *testing.B) {
	for _, name := range []string{"blosc-lz4", "lz4", "zstd"} {
		b.Run(name, func(b *testing.B) {
			codec, frames := cameraFrames(b, 64, name)
			dst := make([]byte, 128*128*3)
			b.SetBytes(int64(len(dst)))
			i := 0
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := codec.Decode(dst, frames[i%len(frames)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			// On a shared machine wall time depends on the other jobs;
			// decoded bytes per CPU second compare with the loader's
			// samples per CPU second (pipetrain bench loader).
			b.ReportMetric(float64(i*len(dst))/1e6/(cpuSeconds()-cpu0), "MB/cpu-s")
		})
	}
}

// BenchmarkDecodeCeilingParallel is BenchmarkDecodeCeiling on every core
// (run with -cpu 2 for the 2-core ceiling).
func BenchmarkDecodeCeilingParallel(b *testing.B) {
	codec, frames := cameraFrames(b, 64, "blosc-lz4")
	b.SetBytes(128 * 128 * 3)
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 128*128*3)
		i := 0
		for pb.Next() {
			if err := codec.Decode(dst, frames[i%len(frames)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
