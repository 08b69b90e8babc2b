package stage

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
