package stage

import (
	"fmt"
	"path/filepath"
	"strings"
)

// HDF5Dataset is one HDF5 dataset a Python loader read through h5py
// (counted by the automatic instrumentation in the processes that read
// it): what it is and its counters since the run began.
type HDF5Dataset struct {
	// File is the absolute path of the HDF5 file; Path the dataset's path
	// inside it (/data/demo_0/obs/agentview_image).
	File string `json:"file"`
	Path string `json:"path"`
	// Shape, Chunks, DType and ItemSize describe the dataset; Chunks is
	// empty for a contiguous (or compact) dataset.
	Shape    []int  `json:"shape"`
	Chunks   []int  `json:"chunks"`
	DType    string `json:"dtype"`
	ItemSize int    `json:"itemsize"`
	// Filter is the compression filter: "gzip", "lzf", "szip", "none", or
	// the id of another filter as text ("32001"); FilterOpts its options
	// (gzip's level); Shuffle whether the shuffle filter precedes it.
	Filter     string `json:"filter"`
	FilterOpts []int  `json:"filter_opts,omitempty"`
	Shuffle    bool   `json:"shuffle,omitempty"`
	// CacheBytes is the size of HDF5's chunk cache the dataset was opened
	// with (h5py's default 1 MiB): a chunk larger than it is decoded again
	// on every read.
	CacheBytes int64 `json:"cache_bytes"`
	// OpenPID is the process that opened the file the first reads went
	// through; 0 when unknown.
	OpenPID int `json:"open_pid,omitempty"`
	// Calls counts the reads (outermost Dataset.__getitem__ and
	// read_direct).
	Calls int64 `json:"calls"`
	// ChunksDecoded counts the chunks HDF5 decompressed for them (chunks
	// its chunk cache held are not counted again).
	ChunksDecoded int64 `json:"chunks_decoded"`
	// BytesDecoded is their decoded size (for a contiguous dataset, the
	// bytes of each selection's extent); BytesReturned what the reads
	// returned.
	BytesDecoded  int64 `json:"bytes_decoded"`
	BytesReturned int64 `json:"bytes_returned"`
	// ReadNs is the time in the reads, decompression included.
	ReadNs int64 `json:"read_ns"`
	// ForkedReads counts the reads through a file another process opened
	// (a DataLoader worker reading the h5py.File the main process opened
	// before the fork); OpenedBeforeFork is ForkedReads > 0.
	ForkedReads      int64 `json:"forked_reads"`
	OpenedBeforeFork bool  `json:"opened_before_fork"`
	// ReadAmp is BytesDecoded / BytesReturned.
	ReadAmp float64 `json:"read_amp"`
}

// FramesPerCall is how much of the first axis a read returned on average
// (1 for dset[i]); 0 when unknown.
func (d *HDF5Dataset) FramesPerCall() float64 {
	frame := int64(max(1, d.ItemSize))
	for _, n := range d.Shape[min(1, len(d.Shape)):] {
		frame *= int64(n)
	}
	if d.Calls == 0 || frame == 0 {
		return 0
	}
	return float64(d.BytesReturned) / float64(frame) / float64(d.Calls)
}

// Name is the dataset as the advice names it: its path in its file's
// base name, "/data/demo_0/obs/image in robomimic.hdf5".
func (d *HDF5Dataset) Name() string {
	if d.File == "" {
		return d.Path
	}
	return d.Path + " in " + filepath.Base(d.File)
}

// FilterText is the filter with its options: "gzip 4", "lzf", "none",
// "filter 32001" for one without a name.
func (d *HDF5Dataset) FilterText() string {
	f := d.Filter
	switch {
	case f == "":
		return "none"
	case f[0] >= '0' && f[0] <= '9':
		f = "filter " + f
	}
	if d.Filter == "gzip" && len(d.FilterOpts) > 0 {
		f += fmt.Sprintf(" %d", d.FilterOpts[0])
	}
	if d.Shuffle {
		f = "shuffle+" + f
	}
	return f
}

// HDF5ReadAmp is the read amplification of l's HDF5 datasets together:
// bytes decoded over bytes returned; 0 when none returned any.
func HDF5ReadAmp(l *LoaderStats) float64 {
	var dec, ret int64
	for _, d := range l.HDF5 {
		dec += d.BytesDecoded
		ret += d.BytesReturned
	}
	if ret == 0 {
		return 0
	}
	return float64(dec) / float64(ret)
}

// ChunkText writes a chunk shape as h5repack's -l option does: 1x84x84x3.
func ChunkText(chunks []int) string {
	parts := make([]string, len(chunks))
	for i, c := range chunks {
		parts[i] = fmt.Sprint(c)
	}
	return strings.Join(parts, "x")
}
