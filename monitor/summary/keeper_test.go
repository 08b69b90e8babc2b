package summary

import (
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// TestKeeperKeepsPauses: the keeper keeps, by trainer pid, each stage's
// pause code from the newest refresh that told it, sorted by stage; a
// refresh without steps or without pauses changes nothing, and a trainer
// with neither readings nor pauses is not kept.
func TestKeeperKeepsPauses(t *testing.T) {
	k := NewKeeper()
	refresh := func(pid, steps int, pauses ...stage.CodeGroup) {
		sm := &stage.Summary{Steps: steps}
		k.AddSnapshot(&snapshot.Snapshot{Trainer: &snapshot.Trainer{PID: pid}, Summary: sm})
		var c *stage.CodeProfile
		if pauses != nil {
			c = &stage.CodeProfile{Pauses: pauses}
		}
		k.AddPauses(pid, sm, c)
	}
	group := func(st string, n int64) stage.CodeGroup {
		return stage.CodeGroup{Role: stage.RoleTrain, Stage: st, Samples: n}
	}
	refresh(41, 10, group(stage.Other, 1))
	refresh(41, 10, group(stage.DataWait, 2))
	refresh(41, 0, group(stage.Other, 9)) // no step: not this run's time
	refresh(41, 10)
	refresh(41, 10, group(stage.Other, 3))
	refresh(42, 10)
	got := k.Kept()
	p := got[41].Pauses
	if len(p) != 2 || p[0].Stage != stage.DataWait || p[0].Samples != 2 || p[1].Stage != stage.Other || p[1].Samples != 3 {
		t.Errorf("pid 41 kept %+v, want data_wait's 2 then other's newest 3", p)
	}
	if _, ok := got[42]; ok {
		t.Errorf("pid 42 kept %+v with no reading and no pause", got[42])
	}
}
