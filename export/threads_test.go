package export

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// TestThreadMetrics: per-role CPU and run-queue wait in cores, the quota
// and its throttling counters, the host's pressure in seconds.
func TestThreadMetrics(t *testing.T) {
	s := snapshot.Snapshot{Threads: &snapshot.Threads{UsableCores: 0.5,
		Threads:  []host.ThreadInfo{{Role: "intra-op", CPU: 30, Wait: 70}, {Role: "intra-op", CPU: 20, Wait: 80}, {Role: "training", CPU: 50}},
		Quota:    snapshot.Quota{Version: 2, CPUs: 0.5, Periods: 100, Throttled: 90, ThrottledSeconds: 4.5},
		Pressure: &snapshot.Pressure{SomeTotalUs: 2_500_000}}}
	ch := make(chan prometheus.Metric, 100)
	threadMetrics{}.Emit(&s, Emitter{Ch: ch})
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		key := m.Desc().String()
		for _, l := range pb.Label {
			key += "/" + l.GetValue()
		}
		got[key] = pb.GetGauge().GetValue() + pb.GetCounter().GetValue()
	}
	for _, c := range []struct {
		d      *prometheus.Desc
		labels string
		want   float64
	}{
		{roleCPUDesc, "/intra-op", 0.5}, {roleWaitDesc, "/intra-op", 1.5}, {roleCountDesc, "/intra-op", 2}, {roleCPUDesc, "/training", 0.5},
		{usableDesc, "", 0.5}, {quotaDesc, "", 0.5}, {periodsDesc, "", 100}, {throttledDesc, "", 90}, {throttledSecDesc, "", 4.5},
		{pressureDesc, "/some", 2.5},
	} {
		if v, ok := got[c.d.String()+c.labels]; !ok || v != c.want {
			t.Errorf("%s%s = %v (present %v), want %v", c.d, c.labels, v, ok, c.want)
		}
	}
	if _, ok := got[pressureDesc.String()+"/full"]; !ok {
		t.Error("no full pressure series")
	}
}
