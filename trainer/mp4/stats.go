package mp4

// FrameRate is the track's mean rate: samples per second of its sample
// durations (0 without samples or time).
func (t *Track) FrameRate() float64 {
	var total uint64
	for _, r := range t.Deltas {
		total += uint64(r.Count) * uint64(r.Delta)
	}
	if total == 0 {
		return 0
	}
	return float64(t.Samples) * float64(t.Timescale) / float64(total)
}

// VariableRate reports whether the samples' durations differ by more than
// one time unit: a constant rate that the timescale cannot represent
// exactly (30 fps in milliseconds: 33, 33, 34 ...) alternates by one.
// The last sample's duration is left out: muxers often write it short or
// long on a constant-rate video.
func (t *Track) VariableRate() bool {
	lo, hi := t.DeltaRange()
	return hi-lo > 1
}

// DeltaRange is the shortest and longest sample duration in time units,
// the last sample's aside (or its own, when it is the only one).
func (t *Track) DeltaRange() (lo, hi uint32) {
	left := t.Samples - 1
	first := true
	for _, r := range t.Deltas {
		n := min(int(r.Count), left)
		if n <= 0 {
			break
		}
		left -= n
		if first || r.Delta < lo {
			lo = r.Delta
		}
		if first || r.Delta > hi {
			hi = r.Delta
		}
		first = false
	}
	if first && len(t.Deltas) > 0 {
		lo, hi = t.Deltas[0].Delta, t.Deltas[0].Delta
	}
	return lo, hi
}

// AllKeyframes reports whether every sample is a keyframe (no stss, or
// one that names them all).
func (t *Track) AllKeyframes() bool {
	return t.Keyframes == nil || len(t.Keyframes) == t.Samples
}

// GOP is the keyframe interval: the longest run of samples from one
// keyframe to the next (to the end for the last one), in samples. A track
// without a keyframe at sample 0 counts its first samples as a run.
func (t *Track) GOP() int {
	if t.AllKeyframes() {
		return min(1, t.Samples)
	}
	longest, prev := 0, 0
	for _, k := range t.Keyframes {
		longest = max(longest, k-prev)
		prev = k
	}
	return max(longest, t.Samples-prev)
}

// DecodesPerFrame is the mean number of frames a decoder decodes to
// return one frame of a uniform random one-frame read that seeks to it:
// from the previous keyframe to the frame, inclusive, in decode order,
// averaged over every frame. Frames before the first keyframe count from
// sample 0. 1 for an all-keyframe track; (G+1)/2 for keyframes every G.
func (t *Track) DecodesPerFrame() float64 {
	if t.Samples == 0 {
		return 0
	}
	if t.AllKeyframes() {
		return 1
	}
	// Each run of L frames from a keyframe (or from sample 0) costs
	// 1 + 2 + ... + L.
	var sum float64
	run := func(l int) { sum += float64(l) * float64(l+1) / 2 }
	prev := 0
	for _, k := range t.Keyframes {
		run(k - prev)
		prev = k
	}
	run(t.Samples - prev)
	return sum / float64(t.Samples)
}
