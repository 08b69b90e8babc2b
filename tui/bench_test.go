package tui

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/tui/styles"
)

// benchFeed holds n steps of seven stages with GPU times, one per ms.
func benchFeed(b *testing.B, n int) (*feed.Feed, time.Time) {
	b.Helper()
	f := feed.New(0)
	names := []string{"data_wait", "h2d", "forward", "backward", "optim", "sync", "other"}
	t0 := time.Unix(1_800_000_000, 0)
	f.Apply(ipc.Message{Connected: &ipc.Hello{Name: "bench", PID: 1, Stages: names}}, t0)
	for i := 0; i < n; i += 50 {
		fr := &ipc.Frame{Type: ipc.TypeSteps}
		for j := i; j < min(n, i+50); j++ {
			end := t0.Add(time.Duration(j) * time.Millisecond).UnixNano()
			fr.Steps = append(fr.Steps, stage.RecordOf(int64(j), end-1e6, end, 64, []int64{int64(5e5 + j%7*1000), 5e4, 2e5, 1e5, 4e4, 1e4, 5e4}, []int64{0, 0, 1e5, 1.5e5, 2e4, 0, 0}))
		}
		f.Apply(ipc.Message{Frame: fr}, t0)
	}
	return f, t0.Add(time.Duration(n) * time.Millisecond)
}

// BenchmarkCollect is one refresh's trainer work at 1,000 steps/s: the
// window summary and verdict, per window length.
func BenchmarkCollect(b *testing.B) {
	for _, w := range monitor.Windows[:3] {
		b.Run(w.Label, func(b *testing.B) {
			f, now := benchFeed(b, int(w.Seconds*1000))
			col := monitor.NewSnapshotter(f)
			b.ResetTimer()
			for range b.N {
				col.Snapshot(now, w)
			}
		})
	}
}

// BenchmarkRender is one refresh's drawing at 120x40.
func BenchmarkRender(b *testing.B) {
	for _, color := range []bool{false, true} {
		b.Run(fmt.Sprintf("color=%v", color), func(b *testing.B) {
			m := replay(b, scenarios[0])
			m.st = styles.New(color)
			base := *m.snap
			b.ResetTimer()
			for range b.N {
				s := base // a new snapshot each refresh, as in the app
				m.SetSnapshot(&s)
				_ = m.Render(120, 40)
			}
		})
	}
}

// BenchmarkDecodeSteps is the frame decoding of one second at 1,000
// steps/s: 20 frames of 50 steps.
func BenchmarkDecodeSteps(b *testing.B) {
	var fr ipc.Frame
	fr.Type = ipc.TypeSteps
	for j := range 50 {
		r := stage.RecordOf(int64(j), 1_800_000_000_000_000_000, 1_800_000_000_001_000_000, 64, []int64{500000, 50000, 200000, 100000, 40000, 10000, 50000}, []int64{0, 0, 100000, 150000, 20000, 0, 0})
		r.HasLoss, r.Loss = true, 0.02365+float32(j)/1e4 // trainers report a loss on every step
		fr.Steps = append(fr.Steps, r)
	}
	line := bytes.TrimSuffix(ipc.AppendFrame(nil, &fr), []byte("\n")) // the wire form
	if f, err := ipc.DecodeFrame(line); err != nil || len(f.Steps) != 50 {
		b.Fatalf("decoded %v, %v", f, err)
	}
	b.SetBytes(int64(20 * len(line)))
	b.ReportAllocs()
	for range b.N {
		for range 20 {
			f, err := ipc.DecodeFrame(line)
			if err != nil {
				b.Fatal(err)
			}
			ipc.Recycle(f) // as the viewer does once the steps are in its rings
		}
	}
}
