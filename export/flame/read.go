package flame

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

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

// WriteFile writes the stack samples of path (a recording or a run
// summary file) to out (stdout when "") as speedscope JSON, or as folded
// stacks with folded. A damaged recording gives its samples up to the
// damage, said on log; a file without samples is an error.
func WriteFile(path, out string, folded bool, stdout, log io.Writer) error {
	samples, damage, err := Read(path)
	if err != nil {
		return err
	}
	if damage != nil {
		fmt.Fprintf(log, "pipetop: %v; using the samples up to there\n", damage)
	}
	if len(samples) == 0 {
		return fmt.Errorf("flame: %s holds no stack samples (they come from Python runs under pipetop run, with PIPETOP_STACKS_HZ above 0)", path)
	}
	w := stdout
	var f *os.File
	if out != "" {
		if f, err = os.Create(out); err != nil {
			return fmt.Errorf("flame: %w", err)
		}
		w = f
	}
	if folded {
		err = WriteFolded(w, samples)
	} else {
		err = WriteSpeedscope(w, filepath.Base(path), samples)
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("flame %s: %w", path, err)
	}
	return nil
}
