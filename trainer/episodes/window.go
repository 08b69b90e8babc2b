package episodes

import (
	"fmt"
)

// WindowParams sets the shape of a training window.
type WindowParams struct {
	NObs         int // observation frames (n_obs_steps)
	Horizon      int // action frames (horizon)
	NActionSteps int // action steps executed (sets pad_after)
}

// DefaultWindow is the seed policy's window: 2 observations, 16 actions,
// 8 executed.
var DefaultWindow = WindowParams{NObs: 2, Horizon: 16, NActionSteps: 8}

// Validate checks the parameters.
func (p WindowParams) Validate() error {
	if p.NObs < 1 || p.Horizon < 1 || p.NActionSteps < 1 {
		return fmt.Errorf("window: n_obs_steps %d, horizon %d, n_action_steps %d must all be >= 1", p.NObs, p.Horizon, p.NActionSteps)
	}
	if p.NObs > p.Horizon {
		return fmt.Errorf("window: n_obs_steps %d exceeds horizon %d", p.NObs, p.Horizon)
	}
	if p.NActionSteps > p.Horizon {
		return fmt.Errorf("window: n_action_steps %d exceeds horizon %d", p.NActionSteps, p.Horizon)
	}
	return nil
}

// PadBefore is n_obs_steps-1; PadAfter is n_action_steps-1.
func (p WindowParams) PadBefore() int { return p.NObs - 1 }

// PadAfter is how far past its episode's last frame a window may reach.
func (p WindowParams) PadAfter() int { return p.NActionSteps - 1 }

// Window is one training sample: Horizon frames from Start, clamped to the
// episode [EpStart, EpEnd).
type Window struct {
	EpStart, EpEnd int64
	Start          int64 // may be before EpStart (padding)
}

// Frame returns the global frame index of position j of the window,
// repeating the episode's edge frames outside it.
func (w Window) Frame(j int) int64 {
	return min(max(w.Start+int64(j), w.EpStart), w.EpEnd-1)
}

// Index lists every valid window of a dataset, in episode order.
type Index struct {
	Params  WindowParams
	Windows []Window
}

// BuildIndex enumerates the windows of episodes ending at episodeEnds
// (exclusive, increasing) with the SequenceSampler rule: starts from
// -pad_before to len-horizon+pad_after inclusive, per episode.
func BuildIndex(episodeEnds []int64, p WindowParams) (*Index, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	idx := &Index{Params: p}
	var start int64
	for e, end := range episodeEnds {
		if end <= start {
			return nil, fmt.Errorf("meta/episode_ends[%d] = %d: episodes must be non-empty and increasing (previous end %d)", e, end, start)
		}
		n := end - start
		lo := int64(-p.PadBefore())
		hi := n - int64(p.Horizon) + int64(p.PadAfter())
		for s := lo; s <= hi; s++ {
			idx.Windows = append(idx.Windows, Window{EpStart: start, EpEnd: end, Start: start + s})
		}
		start = end
	}
	if len(idx.Windows) == 0 {
		return nil, fmt.Errorf("no training windows: every episode is shorter than horizon %d minus padding", p.Horizon)
	}
	return idx, nil
}

// Len is the number of windows.
func (x *Index) Len() int { return len(x.Windows) }
