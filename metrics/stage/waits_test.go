package stage

import (
	"math"
	"testing"
)

// waitsOf is the wait pattern of n steps of 4 ms forward whose data_wait
// is spike ms on steps with i%every == phase and 0.2 ms on the others.
func waitsOf(n, every, phase int, spike float64) *WaitPattern {
	return waitsOfFunc(n, func(i int) float64 {
		if i%every == phase {
			return spike
		}
		return 0.2
	})
}

// waitsOfFunc is the wait pattern of n steps of 4 ms forward whose
// data_wait is wait(i) ms on step i.
func waitsOfFunc(n int, wait func(i int) float64) *WaitPattern {
	names := []string{DataWait, Forward}
	w := NewStepRing(names, 1024)
	var t0 int64
	for i := 0; i < n; i++ {
		r := Record{Step: int64(i), NumStages: len(names), Samples: 1}
		r.ClearGPU()
		r.CPU[0], r.CPU[1] = int64(wait(i)*1e6), 4e6
		r.StartNs, r.EndNs = t0, t0+r.CPU[0]+r.CPU[1]
		t0 = r.EndNs
		w.Add(&r)
	}
	return w.Summarize(0).Waits
}

// TestWaitsEverySecondStep: two saturated workers in turn make every 2nd
// step wait. Whether a window is odd or even and starts on a spike or not,
// the typical step is a quiet one and the pattern is bursty with period 2.
// With the median as the typical step an odd window starting on a spike
// held no spikes at all.
func TestWaitsEverySecondStep(t *testing.T) {
	for _, n := range []int{28, 29, 30, 31} {
		for phase := range 2 {
			p := waitsOf(n, 2, phase, 60)
			if !p.Bursty() || p.Period != 2 || p.TypicalNs != 0.2e6 {
				t.Errorf("%d steps, spikes from step %d: bursty %v, period %d, typical %.0f ns, spikes %.2f; want bursty, period 2, typical 0.2 ms",
					n, phase, p.Bursty(), p.Period, p.TypicalNs, p.Spikes)
			}
		}
	}
}

// TestWaitsSteadyAndRare: a wait on every step is steady, not bursty, and
// so is a steadily slow loader whose waits spread exponentially (mean
// 10 ms, in a scrambled order): a lower TypicalRank would call it bursty.
// One wait in 20 is bursty with its period.
func TestWaitsSteadyAndRare(t *testing.T) {
	if p := waitsOf(40, 1, 0, 30); p.Bursty() {
		t.Errorf("a 30 ms wait on every step: bursty (spikes %.2f), want steady", p.Spikes)
	}
	const n = 200
	exp := func(i int) float64 { // the (j+0.5)/n quantile, j a permutation of i
		j := (i * 73) % n
		return -10 * math.Log(1-(float64(j)+0.5)/n)
	}
	if p := waitsOfFunc(n, exp); p.Bursty() {
		t.Errorf("exponential waits, mean 10 ms: bursty (spikes %.2f holding %.2f of the wait), want steady", p.Spikes, p.SpikeShare)
	}
	if p := waitsOf(100, 20, 3, 200); !p.Bursty() || p.Period != 20 {
		t.Errorf("one 200 ms wait in 20: bursty %v, period %d; want bursty, period 20", p.Bursty(), p.Period)
	}
}

func TestPeriod(t *testing.T) {
	for _, tc := range []struct {
		steps []int64
		want  int64
	}{
		{[]int64{19, 39, 59, 79}, 20},
		{[]int64{19, 40, 60, 80}, 20},
		{[]int64{3, 7, 11, 15, 20}, 4},
		{[]int64{3, 7, 12, 15, 20}, 0},
		{[]int64{1, 2, 3, 4}, 0},
		{[]int64{5, 9, 40, 41, 90}, 0},
		{[]int64{19, 39}, 0},
	} {
		if got := period(tc.steps); got != tc.want {
			t.Errorf("period(%v) = %d, want %d", tc.steps, got, tc.want)
		}
	}
}

// checkpointRing is n steps of 19 ms forward whose untimed rest (other)
// is 0.5 ms but 188 ms on every 25th step: a checkpoint written between
// steps.
func checkpointRing(n int) *StepRing {
	names := []string{DataWait, Forward, Other}
	w := NewStepRing(names, 1024)
	var t0 int64
	for i := range n {
		r := Record{Step: int64(i), NumStages: len(names), Samples: 1}
		r.ClearGPU()
		r.CPU[0], r.CPU[1], r.CPU[2] = 0.1e6, 19e6, 0.5e6
		if i%25 == 24 {
			r.CPU[2] = 188e6
		}
		r.StartNs, r.EndNs = t0, t0+r.CPU[0]+r.CPU[1]+r.CPU[2]
		t0 = r.EndNs
		w.Add(&r)
	}
	return w
}

// TestPausesOfOther: a pause of the untimed rest every 25 steps has its
// pattern, period and share of the run, the same from the steps and from
// aggregates of them; data_wait, flat, has no spikes.
func TestPausesOfOther(t *testing.T) {
	w := checkpointRing(400)
	rings := NewAggRing(w.Names(), 64)
	a := NewAggregator(w.Names())
	for i := range w.Len() {
		r := w.at(i)
		a.Add(&r)
		if i%37 == 36 || i == w.Len()-1 {
			rings.Add(a.Take())
		}
	}
	for _, c := range []struct {
		what string
		s    Summary
	}{{"steps", w.Summarize(0)}, {"aggregates", rings.Summarize(0)}} {
		p := c.s.PauseOf(Other)
		if p == nil {
			t.Fatalf("%s: no pattern of other (pauses %+v)", c.what, c.s.Pauses)
		}
		share := p.RunShare(c.s.WallMean)
		if !p.Bursty() || p.Period != 25 || math.Abs(p.SpikeNs-188e6) > 2e6 || math.Abs(share-0.28) > 0.02 {
			t.Errorf("%s: other bursty %v, period %d, spike %.0f ns, %.2f of the run; want bursty, every 25 steps, 188 ms, 0.28",
				c.what, p.Bursty(), p.Period, p.SpikeNs, share)
		}
		if c.s.PauseOf(Sync) != nil || (c.s.Waits != nil && c.s.Waits.Spikes > 0) {
			t.Errorf("%s: a pattern of a stage without pauses: sync %+v, waits %+v", c.what, c.s.PauseOf(Sync), c.s.Waits)
		}
	}
}

// TestWaitsRecurringBesideJitter: a 400 ms pause every 200 steps beside
// 40 ms spikes on two steps in 100 (a loaded box): the pause is 400 ms
// every 200 steps and its share of the run is its own, where the mean of
// all spikes said 112 ms (a loaded run printed "178 ms every 200
// steps" for 400 ms pushes).
func TestWaitsRecurringBesideJitter(t *testing.T) {
	const n = 1000
	p := waitsOfFunc(n, func(i int) float64 {
		switch {
		case i%200 == 199:
			return 400
		case i%50 == 7:
			return 40
		}
		return 0.2
	})
	if !p.Bursty() || p.Period != 200 || p.EachNs() != 400e6 || math.Abs(p.Recurring-5.0/n) > 1e-9 {
		t.Fatalf("bursty %v, period %d, each %.0f ns over %.3f of the steps; want period 200, 400 ms over 0.005 (spikes' mean %.0f ns)",
			p.Bursty(), p.Period, p.EachNs(), p.Recurring, p.SpikeNs)
	}
	wall := 0.0
	for i := range n {
		wall += 4e6 + 0.2e6
		if i%200 == 199 {
			wall += 400e6 - 0.2e6
		} else if i%50 == 7 {
			wall += 40e6 - 0.2e6
		}
	}
	if got, want := p.RunShare(wall/n), 5*400e6/wall; math.Abs(got-want) > 1e-9 {
		t.Errorf("run share %.4f, want the pauses' own %.4f", got, want)
	}
	if q := waitsOf(100, 20, 3, 200); q.EachNs() != 200e6 || q.RunShare(1) == 0 {
		t.Errorf("a lone periodic pause: each %.0f ns", q.EachNs())
	}
}
