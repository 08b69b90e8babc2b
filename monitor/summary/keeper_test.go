package summary

import (
	"testing"
	"time"

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

// TestKeeperKeepsRSS: the keeper keeps the trainer's newest KeptRSS
// resident-memory readings of the refreshes it trained in, by pid; a
// refresh without steps or of a dead trainer adds none.
func TestKeeperKeepsRSS(t *testing.T) {
	k := NewKeeper()
	t0 := time.Unix(1_800_000_000, 0)
	refresh := func(i, steps int, alive bool) {
		rss := float64(500e6 + i)
		k.AddSnapshot(&snapshot.Snapshot{Time: t0.Add(time.Duration(i) * time.Second), Trainer: &snapshot.Trainer{PID: 41},
			Summary: &stage.Summary{Steps: steps}, Process: &snapshot.Process{Alive: alive, Self: snapshot.Proc{PID: 41, RSS: snapshot.Reading{Value: &rss, State: "ok"}}}})
	}
	for i := range KeptRSS + 10 {
		refresh(i, 10, true)
	}
	refresh(KeptRSS+10, 0, true)
	refresh(KeptRSS+11, 10, false)
	r := k.Kept()[41].RSS
	if r == nil || len(r.Value) != KeptRSS || r.Value[0] != 500e6+10 || r.Value[KeptRSS-1] != 500e6+KeptRSS+9 ||
		r.TimeNs[KeptRSS-1] != t0.Add(time.Duration(KeptRSS+9)*time.Second).UnixNano() {
		t.Errorf("kept %+v, want the newest %d readings", r, KeptRSS)
	}
}
