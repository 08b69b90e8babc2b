package stage

// MergeStacks is one stacks frame holding the rows of a and b (either may
// be nil): b's rows and threads re-indexed into a frame table that holds
// both's frames once. The times and rate are a's (b's without a); rows
// and frames beyond the frame's limits are left out. a and b are not
// changed.
func MergeStacks(a, b *StackSamples) *StackSamples {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := *a
	out.Frames = append([]CodeFrame(nil), a.Frames...)
	out.Rows = append([]StackRow(nil), a.Rows...)
	out.Threads = append([]ThreadSamples(nil), a.Threads...)
	out.Lost += b.Lost
	out.Dropped += b.Dropped
	index := make(map[CodeFrame]int, len(out.Frames))
	for i, f := range out.Frames {
		index[f] = i
	}
	ids := func(stack []int) ([]int, bool) {
		s := make([]int, len(stack))
		for k, j := range stack {
			f := b.Frames[j]
			i, ok := index[f]
			if !ok {
				if len(out.Frames) >= MaxStackFrames {
					return nil, false
				}
				out.Frames = append(out.Frames, f)
				i = len(out.Frames) - 1
				index[f] = i
			}
			s[k] = i
		}
		return s, true
	}
	for _, r := range b.Rows {
		if len(out.Rows) >= MaxStackRows {
			break
		}
		if s, ok := ids(r.Stack); ok {
			r.Stack = s
			out.Rows = append(out.Rows, r)
		}
	}
	for _, t := range b.Threads {
		if len(out.Threads) >= MaxStackThreads {
			break
		}
		rows := make([]ThreadRow, 0, len(t.Rows))
		for _, r := range t.Rows {
			if s, ok := ids(r.Stack); ok {
				r.Stack = s
				rows = append(rows, r)
			}
		}
		t.Rows = rows
		out.Threads = append(out.Threads, t)
	}
	return &out
}
