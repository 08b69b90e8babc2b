package verdict

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// hdf5Cause is the loader's most amplified HDF5 dataset as a read cause:
// its chunking, filter and amplification, and the h5repack command that
// stores it (and the other amplified datasets of its file chunked alike)
// one frame per chunk.
func hdf5Cause(l *stage.LoaderStats) (readCause, bool) {
	d := amplifiedHDF5(l)
	if d == nil {
		return readCause{}, false
	}
	return readCause{
		Why: fmt.Sprintf("the chunking of %s (%s, %s) decompresses %.0fx the bytes each read returns (%s per read)",
			d.Name(), hdf5Chunking(d), d.FilterText(), d.ReadAmp, framesText(d.FramesPerCall())),
		Amp: d.ReadAmp, ReadNs: d.ReadNs, Fix: repackHow(l, d)}, true
}

// amplifiedHDF5 is the HDF5 dataset that decodes the most bytes at
// HighReadAmp or more; nil when none does.
func amplifiedHDF5(l *stage.LoaderStats) *stage.HDF5Dataset {
	var best *stage.HDF5Dataset
	for i := range l.HDF5 {
		d := &l.HDF5[i]
		if d.ReadAmp >= HighReadAmp && (best == nil || d.BytesDecoded > best.BytesDecoded) {
			best = d
		}
	}
	return best
}

// hdf5Chunking describes d's chunks: "one chunk of 150x84x84x3 holds all
// 150 frames", "chunks of 50x84x84x3", "contiguous".
func hdf5Chunking(d *stage.HDF5Dataset) string {
	switch {
	case len(d.Chunks) == 0:
		return "contiguous"
	case len(d.Shape) > 0 && d.Chunks[0] >= d.Shape[0] && d.Shape[0] > 1:
		return fmt.Sprintf("one chunk of %s holds all %d frames", stage.ChunkText(d.Chunks), d.Shape[0])
	}
	return "chunks of " + stage.ChunkText(d.Chunks)
}

// repackHow says how to store d one frame per chunk: the h5repack command
// for it and every other amplified dataset of its file with the same
// frame shape, or the Zarr import of the file.
func repackHow(l *stage.LoaderStats, d *stage.HDF5Dataset) string {
	if len(d.Shape) < 3 {
		return fmt.Sprintf("it is %s: read it whole into memory once (dset[()]) instead of per sample, or store it in chunks of %s",
			units.Bytes(float64(d.ItemSize)*float64(prod(d.Shape))), stage.ChunkText(oneFrame(d.Shape)))
	}
	chunk := stage.ChunkText(oneFrame(d.Shape))
	var paths []string
	for i := range l.HDF5 {
		o := &l.HDF5[i]
		if o.File == d.File && o.ReadAmp >= HighReadAmp && len(o.Shape) == len(d.Shape) && stage.ChunkText(oneFrame(o.Shape)) == chunk {
			paths = append(paths, o.Path)
		}
	}
	out := strings.TrimSuffix(d.File, filepath.Ext(d.File)) + "-rechunked" + filepath.Ext(d.File)
	return fmt.Sprintf("rechunk it to one frame per chunk before adding workers: `h5repack -l %s %s %s` (filters kept) and point the Dataset at the copy, or convert the file to Zarr: `pipetrain data import %s %s`",
		shellWord(strings.Join(paths, ",")+":CHUNK="+chunk), shellWord(d.File), shellWord(out),
		shellWord(d.File), shellWord(strings.TrimSuffix(d.File, filepath.Ext(d.File))+".zarr"))
}

// oneFrame is a shape's chunk of one frame: 1 and the other axes whole.
func oneFrame(shape []int) []int {
	return append([]int{1}, shape[min(1, len(shape)):]...)
}

// shellWord quotes s for a POSIX shell when it holds anything but
// letters, digits and / . , : = + - _.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/.,:=+-_") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hdf5ForkAdvice is the advice for the HDF5 files the DataLoader's workers
// read through a handle the main process opened before they forked
// (HDF5 is not fork-safe); ok is false when there is none.
func hdf5ForkAdvice(l *stage.LoaderStats) (advice string, ok bool) {
	var files []string
	for _, d := range l.HDF5 {
		if d.OpenedBeforeFork {
			if name := filepath.Base(d.File); !slices.Contains(files, name) {
				files = append(files, name)
			}
		}
	}
	if len(files) == 0 {
		return "", false
	}
	return fmt.Sprintf("%s is opened before the DataLoader's workers fork and they read through that h5py.File (HDF5 is not fork-safe: wrong data, errors or serialised reads): open it in each worker instead, in worker_init_fn or lazily on the first __getitem__",
		strings.Join(files, ", ")), true
}
