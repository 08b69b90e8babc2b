package stage

import "testing"

// BenchmarkMeansBetween is the drift baseline of a run of 64 ranks, each
// a full baseline ring (8,192 records of 7 stages, CPU times only): the
// rings together outgrow the caches, so each is summed cold, as a viewer
// does once a refresh at most.
func BenchmarkMeansBetween(b *testing.B) {
	names := []string{DataWait, H2D, Forward, Backward, Comm, Optim, Other}
	rings := make([]*StepRing, 64)
	at := int64(1e18)
	for k := range rings {
		rings[k] = NewStepRing(names, 8192)
		for i := range int64(10000) {
			r := RecordOf(i, at, at+10e6, 64, []int64{1e6, 2e5, 3e6, 4e6, 5e5, 6e5, 7e4}, nil)
			rings[k].Add(&r)
			at += 10e6
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w := rings[i%len(rings)]
		last, _ := w.Last()
		w.MeansBetween(BaselineSkip, 0, last.EndNs)
		i++
	}
}
