package export

import (
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestHistogramBothForms writes a histogram and reads both forms back:
// the classic buckets are cumulative over stage.StepBounds, and the
// native spans and deltas decode to the count of every exponential
// bucket, including across gaps of empty buckets.
func TestHistogramBothForms(t *testing.T) {
	var h stage.Histogram
	want := map[int]uint64{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		// Two clusters far apart (gaps longer than two buckets) and some
		// values in the zero bucket.
		ns := int64(1e6 * (1 + rng.Float64()))
		switch rng.IntN(10) {
		case 0:
			ns = int64(3e9 + rng.Float64()*5e9)
		case 1:
			ns = 100
		}
		h.Observe(ns)
		if s := float64(ns) / 1e9; s > stage.NativeZeroThreshold {
			want[stage.NativeIndex(s)]++
		}
	}
	desc := prometheus.NewDesc("x_seconds", "x", []string{"a"}, nil)
	var m dto.Metric
	if err := newHistogram(desc, &h, []string{"v"}).Write(&m); err != nil {
		t.Fatal(err)
	}
	got := m.GetHistogram()
	if got.GetSampleCount() != 2000 || got.GetSchema() != stage.NativeSchema || got.GetZeroCount() != h.Zero {
		t.Fatalf("count %d schema %d zero %d", got.GetSampleCount(), got.GetSchema(), got.GetZeroCount())
	}
	decoded := map[int]uint64{}
	idx, cnt, d := 0, int64(0), 0
	for _, sp := range got.GetPositiveSpan() {
		idx += int(sp.GetOffset())
		for range sp.GetLength() {
			cnt += got.GetPositiveDelta()[d]
			d++
			if cnt < 0 {
				t.Fatalf("negative count at bucket %d", idx)
			}
			if cnt > 0 {
				decoded[idx] = uint64(cnt)
			}
			idx++
		}
	}
	if len(got.GetPositiveSpan()) < 2 {
		t.Errorf("%d spans; the two clusters should need two", len(got.GetPositiveSpan()))
	}
	if len(decoded) != len(want) {
		t.Errorf("%d native buckets decoded, want %d", len(decoded), len(want))
	}
	for i, c := range want {
		if decoded[i] != c {
			t.Errorf("native bucket %d: %d, want %d", i, decoded[i], c)
		}
	}
	var prev uint64
	for i, b := range got.GetBucket() {
		if b.GetUpperBound() != stage.StepBounds[i].Seconds() || b.GetCumulativeCount() < prev {
			t.Errorf("classic bucket %d: le %v count %d after %d", i, b.GetUpperBound(), b.GetCumulativeCount(), prev)
		}
		prev = b.GetCumulativeCount()
	}
	if prev != 2000 {
		t.Errorf("classic buckets end at %d, want all 2000 (none above 60 s)", prev)
	}
}

// TestHistogramEmpty: a histogram without observations is still marked
// native (an empty span) and has zero classic counts.
func TestHistogramEmpty(t *testing.T) {
	var m dto.Metric
	desc := prometheus.NewDesc("x_seconds", "x", nil, nil)
	if err := newHistogram(desc, &stage.Histogram{}, nil).Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if len(h.GetPositiveSpan()) != 1 || len(h.GetPositiveDelta()) != 0 || h.GetSampleCount() != 0 {
		t.Errorf("empty histogram: spans %v deltas %v count %d", h.GetPositiveSpan(), h.GetPositiveDelta(), h.GetSampleCount())
	}
}
