package ipc

import (
	"context"
	"crypto/sha256"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// work burns a fixed amount of CPU, standing in for a training step: about
// 170 µs on the reference 2-core machine, so the loop publishes ~6,000
// steps/s, six times the 1,000 steps/s of the performance target.
func work(n int) byte {
	var sum [32]byte
	for i := 0; i < n; i++ {
		sum = sha256.Sum256(sum[:])
	}
	return sum[0]
}

const stepWork = 2500 // sha256 blocks per simulated step

var sink byte

// BenchmarkLoop measures a simulated training step that publishes its
// record, with no viewer, 8 reading viewers (taking every step, or agg
// frames as the full-screen view does), and one viewer that never reads. Compare ns/op across the sub-benchmarks: the difference is the
// cost of the viewers to the trainer.
func BenchmarkLoop(b *testing.B) {
	for _, tc := range []struct {
		name           string
		readers, stuck int
		aggs           bool
	}{{"viewers=0", 0, 0, false}, {"viewers=8", 8, 0, false}, {"viewers=8/aggs", 8, 0, true}, {"never-reading=1", 0, 1, false}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := Listen("bench", Hello{Stages: stage.Canonical}, ServerOptions{Dir: benchDir(b), Logf: b.Logf})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := 0; i < tc.readers; i++ {
				c, err := DialView(ctx, s.Path(), ViewOptions{Aggregates: tc.aggs})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				go func() {
					for {
						if _, err := c.Next(); err != nil {
							return
						}
					}
				}()
			}
			for i := 0; i < tc.stuck; i++ {
				c, err := net.Dial("unix", s.Path())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
			}
			for s.Stats().Viewers != tc.readers+tc.stuck {
				time.Sleep(time.Millisecond)
			}
			timer, _ := stage.NewTimer(stage.Canonical)
			fwd := slices.Index(timer.Names(), stage.Forward)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				timer.StartStep(int64(i))
				sp := timer.Begin(fwd)
				sink += work(stepWork)
				sp.End()
				s.Publish(timer.EndStep(64, 0, false))
			}
			b.StopTimer()
			b.ReportMetric(float64(s.Stats().Dropped), "dropped")
		})
	}
}

func benchDir(b *testing.B) string {
	d, err := os.MkdirTemp("/tmp", "ipcb") // short: sun_path holds 108 bytes
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// BenchmarkPublish measures the trainer-side cost of one Publish call.
func BenchmarkPublish(b *testing.B) {
	s, err := Listen("bench", Hello{Stages: stage.Canonical}, ServerOptions{Dir: benchDir(b), Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := record(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Publish(&r)
	}
}

// BenchmarkEncodeSteps measures encoding a frame of 50 steps.
func BenchmarkEncodeSteps(b *testing.B) {
	recs := make([]stage.Record, 50)
	for i := range recs {
		recs[i] = record(int64(i))
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = appendSteps(buf[:0], recs)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkDecodeSteps measures the viewer's decoding of the same frame.
func BenchmarkDecodeSteps(b *testing.B) {
	recs := make([]stage.Record, 50)
	for i := range recs {
		recs[i] = record(int64(i))
	}
	line := appendSteps(nil, recs)
	line = line[:len(line)-1]
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		if _, err := DecodeFrame(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeLoader is one loader frame, as a trainer sends each second.
func BenchmarkDecodeLoader(b *testing.B) {
	line := appendJSON(nil, Frame{Type: TypeLoader, Loader: &stage.LoaderStats{TimeNs: 1796417997417174297, Workers: 2, Batch: 64,
		SamplesPerSec: 639.9992761608186, WorkerBusy: 0.5, QueueDepth: 2, QueueCap: 4, CacheHitRate: 0.9, ReadAmp: 1.2,
		BytesRead: 123456789, BytesDecoded: 234567890, BytesUsed: 200000000, ReadNs: 1e9, DecodeNs: 2e9, CollateNs: 3e8}})
	line = line[:len(line)-1] // a Reader's lines come without their newline
	b.ReportAllocs()
	for range b.N {
		if _, err := DecodeFrame(line); err != nil {
			b.Fatal(err)
		}
	}
}
