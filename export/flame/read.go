package flame

import (
	"fmt"
	"os"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/summary"
)

// Read reads the stack samples of the file at path: the stacks frames of a
// recording, by rank, or the whole-run samples of a run summary
// (pipetop-summary/2, or /1). A damaged recording's samples up to the damage are
// read; damage says where it stopped.
func Read(path string) (samples []Samples, damage, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("flame: %w", err)
	}
	if s, ok, err := summary.DecodeScript(b, path); ok && err == nil {
		return scriptSamples(&s, path)
	}
	_, es, err := recording.ReadAll(path)
	if es == nil && err != nil {
		return nil, nil, err
	}
	return recordedSamples(es), err, nil
}

// scriptSamples are the samples of a run summary read from path.
func scriptSamples(s *summary.Script, path string) ([]Samples, error, error) {
	if s.Stacks == nil {
		return nil, nil, nil
	}
	if err := s.Stacks.Validate(); err != nil {
		return nil, nil, fmt.Errorf("flame: run summary %s: %w", path, err)
	}
	return []Samples{{Frames: []*stage.StackSamples{s.Stacks}}}, nil, nil
}

// recordedSamples gathers the stacks frames of recorded entries by rank.
func recordedSamples(es []recording.Entry) []Samples {
	var out []Samples
	at := map[int]int{} // rank (-1: none) -> index in out
	for _, e := range es {
		if e.Frame == nil || e.Frame.Type != ipc.TypeStacks || e.Frame.Stacks == nil {
			continue
		}
		r := -1
		if e.Rank != nil {
			r = *e.Rank
		}
		i, ok := at[r]
		if !ok {
			i = len(out)
			at[r] = i
			out = append(out, Samples{Rank: e.Rank})
		}
		out[i].Frames = append(out[i].Frames, e.Frame.Stacks)
	}
	return out
}
