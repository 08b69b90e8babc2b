package export

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pipetop/pipetop/metrics/stage"
)

// histogram is a constant histogram that carries both representations of
// a stage.Histogram: the classic buckets (stage.StepBounds, every
// exposition format) and the native exponential buckets (protobuf only,
// read by a Prometheus with native histograms enabled).
// prometheus.NewConstHistogram is classic only and
// prometheus.NewConstNativeHistogram native only, hence this type.
type histogram struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	h      dto.Histogram
}

// newHistogram converts h into a metric of desc with the label values.
func newHistogram(desc *prometheus.Desc, h *stage.Histogram, labelValues []string) prometheus.Metric {
	m := &histogram{desc: desc, labels: prometheus.MakeLabelPairs(desc, labelValues)}
	count, sum := h.Count, float64(h.SumNs)/1e9
	m.h.SampleCount, m.h.SampleSum = &count, &sum
	var cum uint64
	m.h.Bucket = make([]*dto.Bucket, len(stage.StepBounds))
	for i, b := range stage.StepBounds {
		cum += h.Classic[i]
		c, le := cum, b.Seconds()
		m.h.Bucket[i] = &dto.Bucket{CumulativeCount: &c, UpperBound: &le}
	}
	schema, zt, zc := int32(stage.NativeSchema), stage.NativeZeroThreshold, h.Zero
	m.h.Schema, m.h.ZeroThreshold, m.h.ZeroCount = &schema, &zt, &zc
	m.h.PositiveSpan, m.h.PositiveDelta = nativeSpans(h.Native[:])
	return m
}

// nativeSpans encodes the native bucket counts (index 0 is bucket
// stage.NativeMinIndex) as spans of consecutive buckets with the counts as
// deltas, the way the protobuf exposition wants them; a run of empty
// buckets longer than two starts a new span.
func nativeSpans(counts []uint64) ([]*dto.BucketSpan, []int64) {
	var (
		spans  []*dto.BucketSpan
		deltas []int64
		prev   int64
		next   = 0 // bucket after the last one written
		first  = true
	)
	for i, c := range counts {
		if c == 0 {
			continue
		}
		gap := i - next
		switch {
		case first:
			off := int32(i + stage.NativeMinIndex)
			spans = append(spans, &dto.BucketSpan{Offset: &off, Length: new(uint32)})
			first = false
		case gap > 2:
			off := int32(gap)
			spans = append(spans, &dto.BucketSpan{Offset: &off, Length: new(uint32)})
		default:
			for range gap {
				deltas = append(deltas, -prev)
				prev = 0
				*spans[len(spans)-1].Length++
			}
		}
		deltas = append(deltas, int64(c)-prev)
		prev = int64(c)
		*spans[len(spans)-1].Length++
		next = i + 1
	}
	if len(spans) == 0 {
		// No observation above the zero bucket: an empty span still marks
		// the histogram as native.
		spans = []*dto.BucketSpan{{Offset: new(int32), Length: new(uint32)}}
	}
	return spans, deltas
}

// Desc returns the metric's descriptor.
func (m *histogram) Desc() *prometheus.Desc { return m.desc }

// Write fills out with the labels and both bucket representations.
func (m *histogram) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Histogram = &m.h
	return nil
}
