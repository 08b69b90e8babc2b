package export

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestLoaderBatchTrip: a DataLoader whose workers send float32 images
// that could be uint8 serves the bytes a batch, the receive time and the
// factor; one without trip counters serves none of them.
func TestLoaderBatchTrip(t *testing.T) {
	emit := func(l *stage.LoaderStats) map[string]float64 {
		ch := make(chan prometheus.Metric, 100)
		Emitter{Ch: ch}.loader(l, []string{"host", "run", "0"})
		close(ch)
		got := map[string]float64{}
		for m := range ch {
			var pb dto.Metric
			if err := m.Write(&pb); err != nil {
				t.Fatal(err)
			}
			got[m.Desc().String()] = pb.GetGauge().GetValue()
		}
		return got
	}
	got := emit(&stage.LoaderStats{Source: "torch", Workers: 2, Trip: &stage.BatchTrip{Batches: 5, BytesPerBatch: 24 << 20, ReceiveNs: 2e6,
		Tensors: []stage.TripTensor{{Key: "['image']", DType: "float32", Bytes: 24 << 20, Uint8Factor: 4, Uint8Scale: 1}}}})
	for _, c := range []struct {
		d    *prometheus.Desc
		want float64
	}{{loaderBatchBytesDesc, 24 << 20}, {loaderBatchReceiveDesc, 0.002}, {loaderBatchUint8Desc, 4}} {
		if v, ok := got[c.d.String()]; !ok || v != c.want {
			t.Errorf("%s = %v (present %v), want %v", c.d, v, ok, c.want)
		}
	}
	if _, ok := emit(&stage.LoaderStats{Workers: 2})[loaderBatchBytesDesc.String()]; ok {
		t.Error("a loader without trip counters serves pipetop_loader_batch_bytes")
	}
}
