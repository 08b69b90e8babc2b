package stage

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/units"
)

// ZarrArray is one Zarr array a Python loader read (counted by the
// automatic instrumentation in the processes that read it): what it is and
// its counters since the run began.
type ZarrArray struct {
	// Store is the local directory of the array's store; empty when it is
	// not one (memory, a remote store).
	Store string `json:"store"`
	// Path is the array's path inside the store; empty for an array at
	// the store's root.
	Path string `json:"path"`
	// Shape, Chunks, DType and ItemSize describe the array; Chunks are the
	// chunks a read decodes (a sharded array's inner chunks).
	Shape    []int  `json:"shape"`
	Chunks   []int  `json:"chunks"`
	DType    string `json:"dtype"`
	ItemSize int    `json:"itemsize"`
	// ZarrFormat is the zarr-python major version that read it (2 or 3).
	ZarrFormat int `json:"zarr_format"`
	// ReplayBuffer says the store has the replay-buffer layout `pipetrain
	// data inspect` reads with its default keys (meta/episode_ends,
	// data/camera0..3, data/state, data/action).
	ReplayBuffer bool `json:"replay_buffer,omitempty"`
	// Calls counts the reads (outermost __getitem__ and get_*_selection).
	Calls int64 `json:"calls"`
	// ChunksDecoded counts the chunks decoded for them.
	ChunksDecoded int64 `json:"chunks_decoded"`
	// BytesRead is the compressed bytes of those chunks (zarr 2 only).
	BytesRead int64 `json:"bytes_read"`
	// BytesDecoded is their decoded size; BytesReturned what the reads
	// returned.
	BytesDecoded  int64 `json:"bytes_decoded"`
	BytesReturned int64 `json:"bytes_returned"`
	// DecodeNs is the time decoding chunks (zarr 2 only); ReadNs the time
	// in the reads, decoding included.
	DecodeNs int64 `json:"decode_ns"`
	ReadNs   int64 `json:"read_ns"`
	// ReadAmp is BytesDecoded / BytesReturned.
	ReadAmp float64 `json:"read_amp"`
}

// FramesPerCall is how much of the first axis a read returned on average
// (1 for arr[i]); 0 when unknown.
func (a *ZarrArray) FramesPerCall() float64 {
	frame := int64(max(1, a.ItemSize))
	for _, d := range a.Shape[min(1, len(a.Shape)):] {
		frame *= int64(d)
	}
	if a.Calls == 0 || frame == 0 {
		return 0
	}
	return float64(a.BytesReturned) / float64(frame) / float64(a.Calls)
}

// Name is the array as the advice names it: its path in the store, or
// the store for an array at the root.
func (a *ZarrArray) Name() string {
	switch {
	case a.Path != "":
		return a.Path
	case a.Store != "":
		return a.Store
	}
	return "a Zarr array"
}

// amplified is the array that decodes the most bytes at HighReadAmp or
// more; nil when none does.
func amplified(l *LoaderStats) *ZarrArray {
	if l == nil {
		return nil
	}
	var best *ZarrArray
	for i := range l.Zarr {
		a := &l.Zarr[i]
		if a.ReadAmp >= HighReadAmp && (best == nil || a.BytesDecoded > best.BytesDecoded) {
			best = a
		}
	}
	return best
}

// zarrAdvice is the rechunk advice for the loader's most amplified Zarr
// array; ok is false when none is amplified.
func zarrAdvice(l *LoaderStats) (advice string, ok bool) {
	a := amplified(l)
	if a == nil {
		return "", false
	}
	what := fmt.Sprintf("the chunking of %s decodes %.0fx the bytes it returns (%s per read of a %s chunk)",
		a.Name(), a.ReadAmp, framesText(a.FramesPerCall()), shapeText(a.Chunks))
	return what + ": " + rechunkHow(a), true
}

// rechunkHow says how to store a in chunks of one frame.
func rechunkHow(a *ZarrArray) string {
	one := shapeText(append([]int{1}, a.Shape[min(1, len(a.Shape)):]...))
	switch {
	case len(a.Shape) < 3:
		return fmt.Sprintf("it is %s: read it whole into memory once (np.asarray(arr[:])) instead of per sample, or store it with chunks=%s",
			units.Bytes(float64(a.ItemSize)*float64(prod(a.Shape))), one)
	case a.Store == "" || a.Path == "":
		return fmt.Sprintf("store it in 1-frame chunks (chunks=%s) before adding workers", one)
	}
	cmd := fmt.Sprintf("`pipetrain data rechunk %s --chunk-frames 1`", rechunkArgs(a.Store))
	if a.ReplayBuffer {
		cmd = fmt.Sprintf("`pipetrain data inspect %s`, then %s", strings.TrimSuffix(a.Store, "/"), cmd)
	}
	return "rechunk it to 1-frame chunks before adding workers: " + cmd + " and point the Dataset at the copy"
}

func prod(v []int) int {
	p := 1
	for _, x := range v {
		p *= x
	}
	return p
}

// shapeText writes a shape as Python does: (2000, 16, 16, 1).
func shapeText(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	if len(s) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// framesText says how many frames a read returns.
func framesText(f float64) string {
	switch {
	case f <= 0:
		return "an unknown number of frames"
	case f < 1.05 && f > 0.95:
		return "1 frame"
	case f < 10:
		return fmt.Sprintf("%.1f frames", f)
	}
	return fmt.Sprintf("%.0f frames", f)
}
