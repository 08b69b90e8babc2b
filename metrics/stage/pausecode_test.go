package stage

import "testing"

// TestPauseGroup: a loop that logs on every step (steady untimed work)
// and saves a checkpoint every third second: the mean profile of the
// untimed stage names the logging, the pauses' own samples the save.
func TestPauseGroup(t *testing.T) {
	logStack := join(mainLoop, []CodeFrame{fr("log_metrics", "train.py", 40), lib("json", "dumps", "json/__init__.py", 231)})
	saveStack := join(mainLoop, []CodeFrame{fr("save_checkpoint", "train.py", 55), lib("torch", "save", "torch/serialization.py", 423)})
	steps := join(mainLoop, []CodeFrame{fr("Net.forward", "train.py", 20)})
	frames := func(n int, pauseEvery int) *CodeRing {
		c := NewCodeRing(0)
		for i := 0; i < n; i++ {
			rows := []testRow{{role: RoleTrain, stage: Other, stack: logStack, n: 30}, {role: RoleTrain, stage: Forward, stack: steps, n: 50}}
			if i%pauseEvery == 0 {
				rows = append(rows, testRow{role: RoleTrain, stage: Other, stack: saveStack, n: 40})
			}
			c.Add(samplesOf(int64(i+1)*1e9, rows...))
		}
		return c
	}
	c := frames(12, 3)
	mean := c.Profile(0, 1e12).Group(RoleTrain, Other)
	if mean.Hot == nil || mean.Hot.User.Name != "log_metrics" {
		t.Fatalf("mean hot spot %+v, want log_metrics", mean.Hot)
	}
	g := c.PauseGroup(0, 1e12, Other, 400e6, 3e9)
	if g == nil || g.Hot == nil {
		t.Fatalf("pause group %+v, want one naming save_checkpoint", g)
	}
	if g.Hot.User.Name != "save_checkpoint" || g.Hot.Share < 0.99 || g.Samples != 4*40 {
		t.Errorf("pause hot spot %s %.2f over %d samples, want save_checkpoint, all of 160", g.Hot.User.Name, g.Hot.Share, g.Samples)
	}
	// A save that holds the GIL: few samples, each standing for long.
	held := NewCodeRing(0)
	for i := 0; i < 9; i++ {
		rows := []testRow{{role: RoleTrain, stage: Other, stack: logStack, n: 30}}
		if i%3 == 0 {
			rows = append(rows, testRow{role: RoleTrain, stage: Other, stack: saveStack, n: 1})
			rows[1].n = 1
		}
		s := samplesOf(int64(i+1)*1e9, rows...)
		if i%3 == 0 {
			s.Rows[1].Ns = 500e6 // one sample after a 500 ms hold
		}
		held.Add(s)
	}
	if g := held.PauseGroup(0, 1e12, Other, 500e6, 3e9); g == nil || g.Hot == nil || g.Hot.User.Name != "save_checkpoint" || g.Samples != 3 {
		t.Errorf("pause group of a GIL-holding save %+v, want save_checkpoint over 3 samples of 1.5 s", g)
	}
	// The summary's periodic pattern puts it in the profile.
	s := &Summary{Pauses: []Pause{{Stage: Other, WaitPattern: WaitPattern{Spikes: 0.01, SpikeShare: 0.8, SpikeNs: 400e6, Period: 100, Recurring: 0.01, RecurringNs: 400e6}}}, WallMean: 30e6}
	if p := c.PauseProfile(0, 1e12, s); p.Pause(Other) == nil || p.Pause(DataWait) != nil {
		t.Errorf("profile pauses %+v, want the untimed stage's only", p.Pauses)
	}
	// A pause in every frame cannot be told from the steps; nor can
	// one without frames of their own time (a whole run's).
	if g := frames(6, 1).PauseGroup(0, 1e12, Other, 400e6, 3e9); g != nil {
		t.Errorf("a pause in every frame gave %+v", g)
	}
	// Pauses every 0.4 s: frames differ by how many they hold.
	if g := c.PauseGroup(0, 1e12, Other, 400e6, 0.4e9); g != nil {
		t.Errorf("pauses within a frame of each other gave %+v", g)
	}
	whole := NewCodeRing(0)
	w := samplesOf(1e9, testRow{role: RoleTrain, stage: Other, stack: saveStack, n: 40})
	w.IntervalNs = 0
	whole.Add(w)
	if g := whole.PauseGroup(0, 1e12, Other, 400e6, 3e9); g != nil {
		t.Errorf("a whole run's frame gave %+v", g)
	}
}
