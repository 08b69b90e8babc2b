// Package loadertext writes what a loader read, one line per source (a
// Zarr array, an HDF5 dataset, a video stream, the batches' trip from the
// workers), for the end-of-run text and the bisect and tune tables.
package loadertext

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Source is one line: what was read (Kind: "zarr", "hdf5", "batch",
// "video") and how (Text).
type Source struct{ Kind, Text string }

// Sources are l's sources: Zarr arrays, HDF5 datasets, the batches' trip
// from the workers, video streams, in that order. HDF5 and video lines
// say so when their reads were counted in a share of the time.
func Sources(l *stage.LoaderStats) []Source {
	var out []Source
	for _, a := range l.Zarr {
		out = append(out, Source{"zarr", Zarr(&a)})
	}
	for _, d := range l.HDF5 {
		out = append(out, Source{"hdf5", HDF5(&d) + Counted(l)})
	}
	if t := l.Trip; t != nil && t.Batches > 0 {
		out = append(out, Source{"batch", Trip(t)})
	}
	for _, v := range l.Video {
		out = append(out, Source{"video", Video(&v) + Counted(l)})
	}
	return out
}

// Counted is the note that l's HDF5 and video reads were counted in a
// share of the time (their counts scaled to all of it); "" when in full.
func Counted(l *stage.LoaderStats) string {
	if l.CountedShare <= 0 || l.CountedShare >= 1 {
		return ""
	}
	return fmt.Sprintf(" (counted %s of the time, counts scaled)", units.Pct(l.CountedShare))
}

// Zarr describes one Zarr array's reads.
func Zarr(a *stage.ZarrArray) string {
	return fmt.Sprintf("%s chunks %v, %d reads (%.1f frames each), read amplification %.1fx (%s decoded for %s returned)",
		a.Name(), a.Chunks, a.Calls, a.FramesPerCall(), a.ReadAmp, units.Bytes(float64(a.BytesDecoded)), units.Bytes(float64(a.BytesReturned)))
}

// HDF5 describes one HDF5 dataset's reads.
func HDF5(d *stage.HDF5Dataset) string {
	chunks := "contiguous"
	if len(d.Chunks) > 0 {
		chunks = "chunks " + stage.ChunkText(d.Chunks)
	}
	line := fmt.Sprintf("%s %s %s, %d reads (%.1f frames each), read amplification %.1fx (%s decompressed for %s returned)",
		d.Name(), chunks, d.FilterText(), d.Calls, d.FramesPerCall(), d.ReadAmp, units.Bytes(float64(d.BytesDecoded)), units.Bytes(float64(d.BytesReturned)))
	if d.OpenedBeforeFork {
		line += fmt.Sprintf("; %d reads through the file opened before the fork", d.ForkedReads)
	}
	return line
}

// Trip describes what the batches carried from the workers to the main
// process, and the float images that could be uint8.
func Trip(t *stage.BatchTrip) string {
	line := fmt.Sprintf("%s a batch from the workers to the main process, received in %s (%d batches)",
		units.Bytes(float64(t.BytesPerBatch)), units.Dur(float64(t.ReceiveNs)), t.Batches)
	if imgs := t.Uint8(); len(imgs) > 0 {
		keys := make([]string, len(imgs))
		for i, x := range imgs {
			keys[i] = "batch" + x.Key
		}
		line += fmt.Sprintf("; %s %s where uint8 would do (%dx the bytes, %s a batch)",
			strings.Join(keys, ", "), imgs[0].DType, imgs[0].Uint8Factor, units.Bytes(float64(t.Uint8Saved())))
	}
	return line
}

// Video describes one video stream's decoding.
func Video(v *stage.VideoStream) string {
	gop := "keyframe interval unknown"
	if v.GOP > 0 {
		gop = fmt.Sprintf("a keyframe every %d frames", v.GOP)
	}
	return fmt.Sprintf("%s %s %dx%d, %s, %d opens for %d reads, %d frames decoded for %d returned (read amplification %.1fx); decode %s, convert %s, open/seek %s",
		v.Name(), v.Codec, v.Width, v.Height, gop, v.Opens, v.Calls, v.FramesDecoded, v.FramesReturned, v.ReadAmp,
		units.Dur(float64(v.DecodeNs)), units.Dur(float64(v.ConvertNs)), units.Dur(float64(v.ReadNs)))
}
