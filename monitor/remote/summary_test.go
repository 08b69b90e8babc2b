package remote

import (
	"math"
	"testing"
)

// TestSummarize: a rank's rates become the summary a local viewer would
// compute over the same steps: 20 steps/s of 50 ms, 30 ms of it comm.
func TestSummarize(t *testing.T) {
	r := &rankData{rank: 1, steps: 200, rate: 20, wall: 0.05, p50: 0.05, p99: 0.07, lastStep: 999, lastEnd: 1.7e9,
		stages: map[string]*stageRate{
			"mine":    {cpu: 0.1},
			"comm":    {cpu: 0.6, gpu: 0.5, hasGPU: true},
			"forward": {cpu: 0.3, gpu: 0.2, hasGPU: true},
		}}
	s := r.summarize()
	if s == nil {
		t.Fatal("no summary")
	}
	if s.Steps != 200 || s.WallMean != 5e7 || s.WallP99 != 7e7 || s.LastStep != 999 || s.LastEndNs != 1.7e18 {
		t.Errorf("summary %+v", s)
	}
	want := []struct {
		name        string
		mean, share float64
	}{{"forward", 15e6, 0.3}, {"comm", 30e6, 0.6}, {"mine", 5e6, 0.1}}
	if len(s.Stages) != len(want) {
		t.Fatalf("stages %+v", s.Stages)
	}
	for i, w := range want {
		st := s.Stages[i]
		if st.Name != w.name || math.Abs(st.Mean-w.mean) > 1 || math.Abs(st.Share-w.share) > 1e-9 {
			t.Errorf("stage %d = %+v, want %s mean %v share %v", i, st, w.name, w.mean, w.share)
		}
	}
	if !s.HasGPU || math.Abs(s.GPUBusy-0.2) > 1e-9 { // comm's GPU time waits for the other ranks: not busy
		t.Errorf("GPU busy %v (has %v), want 0.2: forward's, not comm's", s.GPUBusy, s.HasGPU)
	}
	if (&rankData{steps: 0.2, rate: 0.01, wall: 1}).summarize() != nil {
		t.Error("a summary of no step")
	}
}

func TestScrapeInterval(t *testing.T) {
	n := func(v float64) []Sample { return []Sample{{V: v}} }
	for _, tc := range []struct {
		perMinute, per10s []Sample
		want              float64
	}{
		{n(60), n(10), 1},
		{n(12), n(10), 1}, // a series 12 s old
		{n(4), n(1), 15},
		{nil, nil, 0},
	} {
		if got := scrapeInterval(tc.perMinute, tc.per10s); got != tc.want {
			t.Errorf("scrapeInterval(%v, %v) = %v, want %v", tc.perMinute, tc.per10s, got, tc.want)
		}
	}
}
