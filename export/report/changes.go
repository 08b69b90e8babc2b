package report

import (
	"math"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Change is a step change in one stage's time per step (or the step time):
// the single split of the run's steps that best separates two levels.
type Change struct {
	Stage    string  // a stage name, or StepTime
	AtSec    float64 // when the first step at the new level ended, since the run's first step
	BeforeNs float64 // mean before
	AfterNs  float64 // mean after
}

// At is when the change happened, as m:ss.
func (c Change) At() string { return clock(c.AtSec) }

// Before is the mean before the change, as a duration.
func (c Change) Before() string { return units.Dur(c.BeforeNs) }

// After is the mean after the change, as a duration.
func (c Change) After() string { return units.Dur(c.AfterNs) }

// StepTime names the step wall time among the changes.
const StepTime = "step time"

// Thresholds of a step change worth marking.
const (
	// MinChangePart is the smallest shift marked, as a part of the run's
	// mean step time: a stage that moves less does not change the run.
	MinChangePart = 0.10
	// MinChangeT is the smallest shift marked, in standard errors of the
	// difference of the two means.
	MinChangeT = 10
	// MinChangeSteps is the fewest steps on either side of a change.
	MinChangeSteps = 20
)

// changes finds the largest step change of each stage and of the step time
// over steps (under the stage list names), times from first (Unix ns).
func changes(steps []stage.Record, names []string, first int64) []Change {
	if len(steps) < 2*MinChangeSteps {
		return nil
	}
	var wall float64
	for i := range steps {
		wall += float64(steps[i].WallNs())
	}
	wall /= float64(len(steps))
	series := func(get func(*stage.Record) float64) []float64 {
		x := make([]float64, len(steps))
		for i := range steps {
			x[i] = get(&steps[i])
		}
		return x
	}
	var out []Change
	add := func(name string, x []float64) {
		if k, m1, m2, ok := split(x, MinChangePart*wall); ok {
			out = append(out, Change{Stage: name, AtSec: float64(steps[k].EndNs-first) / 1e9, BeforeNs: m1, AfterNs: m2})
		}
	}
	add(StepTime, series(func(r *stage.Record) float64 { return float64(r.WallNs()) }))
	for j, name := range names {
		if name == stage.Other {
			continue
		}
		add(name, series(func(r *stage.Record) float64 {
			if j < r.NumStages {
				return float64(r.CPU[j])
			}
			return 0
		}))
	}
	return out
}

// split is the best single split of x: the first index k of the second
// part and both parts' means, maximizing the between-parts sum of squares;
// ok when the means differ by at least minShift and by MinChangeT
// standard errors.
func split(x []float64, minShift float64) (k int, m1, m2 float64, ok bool) {
	n := len(x)
	sum, sq := make([]float64, n+1), make([]float64, n+1)
	for i, v := range x {
		sum[i+1], sq[i+1] = sum[i]+v, sq[i]+v*v
	}
	best := -1.0
	for i := MinChangeSteps; i <= n-MinChangeSteps; i++ {
		a, b := float64(i), float64(n-i)
		d := sum[i]/a - (sum[n]-sum[i])/b
		if s := a * b / float64(n) * d * d; s > best {
			best, k = s, i
		}
	}
	if k == 0 {
		return 0, 0, 0, false
	}
	a, b := float64(k), float64(n-k)
	m1, m2 = sum[k]/a, (sum[n]-sum[k])/b
	v1 := max(0, sq[k]/a-m1*m1) * a / max(1, a-1)
	v2 := max(0, (sq[n]-sq[k])/b-m2*m2) * b / max(1, b-1)
	se := math.Sqrt(v1/a + v2/b)
	d := math.Abs(m2 - m1)
	return k, m1, m2, d >= minShift && d > MinChangeT*se
}
