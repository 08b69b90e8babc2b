package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestPlantedStraggler: with -ranks 4 -straggler 2 every rank's step has
// the same start and end, the stages add up to the wall time, rank 2 waits
// longest for data and shortest in comm, and the others wait in comm for
// about the planted gap.
func TestPlantedStraggler(t *testing.T) {
	o, err := parse([]string{"-ranks", "4", "-straggler", "2", "-straggle", "8ms"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"data_wait", "h2d", "forward", "backward", "comm", "optim", "sync"}; !slices.Equal(o.names, want) {
		t.Fatalf("stages %v, want %v", o.names, want)
	}
	names := append(slices.Clone(o.names), stage.Other)
	p := newPublisher(o, names)
	wait, comm := slices.Index(names, stage.DataWait), slices.Index(names, stage.Comm)
	for step := range int64(20) {
		recs := p.ranks(step, time.Unix(100, 0))
		for r, rec := range recs {
			var sum int64
			for i := range rec.NumStages {
				sum += rec.CPU[i]
			}
			if rec.StartNs != recs[0].StartNs || rec.EndNs != recs[0].EndNs {
				t.Fatalf("step %d: rank %d's step is not the others' span", step, r)
			}
			if sum != rec.WallNs() {
				t.Fatalf("step %d rank %d: stages add up to %d, wall %d", step, r, sum, rec.WallNs())
			}
			if r == 2 {
				continue
			}
			if rec.CPU[wait] >= recs[2].CPU[wait] || rec.CPU[comm] <= recs[2].CPU[comm] {
				t.Fatalf("step %d: rank %d data_wait %d comm %d vs straggler's %d %d", step, r, rec.CPU[wait], rec.CPU[comm], recs[2].CPU[wait], recs[2].CPU[comm])
			}
			if gap := rec.CPU[comm] - recs[2].CPU[comm]; gap < int64(6*time.Millisecond) {
				t.Fatalf("step %d rank %d: waits %s in comm beyond the straggler, want about 8ms", step, r, time.Duration(gap))
			}
		}
	}
}

func TestRankFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-ranks", "0"}, "-ranks 0"},
		{[]string{"-ranks", "2", "-straggler", "2"}, "-straggler 2"},
		{[]string{"-ranks", "2", "-straggler", "0", "-stages", "forward=1ms"}, "no data_wait"},
	} {
		if _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%v) = %v, want an error about %q", tc.args, err, tc.want)
		}
	}
}
