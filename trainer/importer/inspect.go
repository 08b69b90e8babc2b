package importer

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/hdf5"
	"github.com/pipetop/pipetop/trainer/mp4"
)

// SourceReport is what `pipetrain data inspect` says of an HDF5 file or of
// MP4 files.
type SourceReport struct {
	Path string `json:"path"`
	// Format is "hdf5" or "mp4".
	Format   string          `json:"format"`
	Datasets []DatasetReport `json:"datasets,omitempty"`
	Videos   []VideoReport   `json:"videos,omitempty"`
	// ReadAmp is the worst predicted cost of a one-frame read among the
	// image datasets (bytes decompressed per byte returned) or the video
	// streams (frames decoded per frame returned).
	ReadAmp        float64 `json:"predicted_read_amp"`
	Recommendation string  `json:"recommendation"`
}

// DatasetReport describes one HDF5 dataset.
type DatasetReport struct {
	Path   string `json:"path"`
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Chunks []int  `json:"chunks"` // nil: contiguous
	// Filters names the filter pipeline ("shuffle", "gzip(4)", "lzf",
	// "filter 32001 (unnamed, not available)"); FilterIDs their numbers.
	Filters   []string `json:"filters"`
	FilterIDs []int    `json:"filter_ids"`
	// Unreadable is true when a filter cannot be decoded here.
	Unreadable  bool  `json:"unreadable,omitempty"`
	RawBytes    int64 `json:"raw_bytes"`
	StoredBytes int64 `json:"stored_bytes"`
	// Image is true for a (T,H,W,3) uint8 dataset.
	Image bool `json:"image"`
	// ChunkBytes is the decoded bytes of the chunks one row (frame)
	// touches; FrameBytes one row's bytes; ReadAmp their ratio, the
	// predicted read amplification of a one-frame read (1 when
	// contiguous).
	ChunkBytes int64   `json:"chunk_bytes_per_frame"`
	FrameBytes int64   `json:"frame_bytes"`
	ReadAmp    float64 `json:"read_amp_one_frame"`
}

// VideoReport describes one video stream.
type VideoReport struct {
	File   string  `json:"file"`
	Stream int     `json:"stream"`
	Codec  string  `json:"codec"`
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Frames int     `json:"frames"`
	FPS    float64 `json:"fps"`
	// Variable is true when frame durations differ (MinFrameMs to
	// MaxFrameMs).
	Variable   bool    `json:"variable_frame_rate"`
	MinFrameMs float64 `json:"min_frame_ms"`
	MaxFrameMs float64 `json:"max_frame_ms"`
	// GOP is the longest keyframe interval, Keyframes their number.
	GOP       int `json:"gop"`
	Keyframes int `json:"keyframes"`
	// DecodesPerFrame is the predicted frames decoded per frame returned
	// by a uniform random one-frame read (mp4.Track.DecodesPerFrame).
	DecodesPerFrame float64 `json:"decodes_per_frame"`
	// Truncated is true when the index places sample data past the end
	// of the file.
	Truncated bool `json:"truncated,omitempty"`
}

// InspectHDF5 reports the datasets of an HDF5 file and the predicted cost
// of one-frame reads.
func InspectHDF5(file string) (*SourceReport, error) {
	f, err := hdf5.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Datasets()
	if err != nil {
		return nil, err
	}
	r := &SourceReport{Path: file, Format: "hdf5"}
	for _, n := range names {
		d, err := f.Dataset(n)
		if err != nil {
			return nil, err
		}
		r.Datasets = append(r.Datasets, datasetReport(d))
		d.Close()
	}
	r.recommendHDF5()
	return r, nil
}

func datasetReport(d *hdf5.Dataset) DatasetReport {
	dr := DatasetReport{Path: d.Path, DType: d.DType.String(), Shape: d.Shape, Chunks: d.Chunks, StoredBytes: d.StoredBytes,
		Image: isCamera(d), Filters: []string{}, FilterIDs: []int{}}
	for _, fl := range d.Filters {
		dr.Filters = append(dr.Filters, fl.String())
		dr.FilterIDs = append(dr.FilterIDs, fl.ID)
		dr.Unreadable = dr.Unreadable || !fl.Available
	}
	if len(d.Shape) == 0 {
		return dr
	}
	dr.FrameBytes = d.RowBytes()
	dr.RawBytes = dr.FrameBytes * int64(d.Shape[0])
	dr.ChunkBytes = dr.FrameBytes
	if d.Chunks != nil {
		dr.ChunkBytes = int64(d.DType.Size) * int64(d.Chunks[0])
		for i := 1; i < len(d.Shape); i++ {
			dr.ChunkBytes *= int64((d.Shape[i] + d.Chunks[i] - 1) / d.Chunks[i] * d.Chunks[i])
		}
	}
	if dr.FrameBytes > 0 {
		dr.ReadAmp = float64(dr.ChunkBytes) / float64(dr.FrameBytes)
	}
	return dr
}

// recommendHDF5 sets ReadAmp and the advice from the image datasets.
func (r *SourceReport) recommendHDF5() {
	var bad []DatasetReport
	var worst DatasetReport
	var unreadable []string
	lzf := false
	for _, d := range r.Datasets {
		for _, id := range d.FilterIDs {
			lzf = lzf || id == hdf5.LZF
		}
		if d.Unreadable {
			unreadable = append(unreadable, fmt.Sprintf("%s (%s)", d.Path, strings.Join(d.Filters, ", ")))
		}
		if !d.Image {
			continue
		}
		if d.ReadAmp > r.ReadAmp {
			r.ReadAmp, worst = d.ReadAmp, d
		}
		if d.ReadAmp > 1.5 {
			bad = append(bad, d)
		}
	}
	var advice []string
	if len(unreadable) > 0 {
		advice = append(advice, fmt.Sprintf("%d datasets use a filter this libhdf5 cannot decode: %s; make its plugin available through HDF5_PLUGIN_PATH before importing", len(unreadable), strings.Join(unreadable, "; ")))
	}
	switch {
	case len(bad) > 0:
		advice = append(advice, fmt.Sprintf("%d image datasets are chunked over frames (%v): a one-frame read decompresses up to %.0fx the frame it returns (%s per %s frame). Rechunk to one frame per chunk: %s %s OUT.h5, or convert to Zarr with 1-frame chunks: pipetrain data import %s DST",
			len(bad), worst.Chunks, r.ReadAmp, dataset.HumanBytes(worst.ChunkBytes), dataset.HumanBytes(worst.FrameBytes),
			repackCommand(bad), r.Path, r.Path))
		if lzf {
			advice = append(advice, "h5repack reads this file's LZF datasets only with h5py's LZF filter as an HDF5 plugin (HDF5_PLUGIN_PATH); pipetrain data import decodes LZF itself")
		}
	case r.ReadAmp > 0:
		advice = append(advice, "image chunks hold one frame (or the images are contiguous): a one-frame read decompresses only that frame")
	default:
		advice = append(advice, "no (T,H,W,3) uint8 image datasets")
	}
	r.Recommendation = strings.Join(advice, ". ")
}

// repackCommand is the h5repack command (less its files) that gives the
// datasets 1-frame chunks: one -l per frame shape.
func repackCommand(ds []DatasetReport) string {
	var shapes []string
	paths := map[string][]string{}
	for _, d := range ds {
		layout := fmt.Sprintf("CHUNK=1x%dx%dx%d", d.Shape[1], d.Shape[2], d.Shape[3])
		if paths[layout] == nil {
			shapes = append(shapes, layout)
		}
		paths[layout] = append(paths[layout], d.Path)
	}
	cmd := "h5repack"
	for _, l := range shapes {
		cmd += fmt.Sprintf(" -l %s:%s", strings.Join(paths[l], ","), l)
	}
	return cmd
}

// InspectMP4 reports the video streams of an MP4 file, or of the cameras
// of a directory as import finds them (per-camera files, or directories of
// per-episode files, one row per camera), and the predicted cost of
// one-frame reads.
func InspectMP4(path string) (*SourceReport, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	r := &SourceReport{Path: path, Format: "mp4"}
	if !st.IsDir() {
		f, err := mp4.Open(path)
		if err != nil {
			return nil, err
		}
		for _, t := range f.Video() {
			v := videoReport(path, []*mp4.Track{t})
			v.Truncated = f.Truncated(t)
			r.Videos = append(r.Videos, v)
		}
		r.recommendMP4()
		return r, nil
	}
	cams, err := openCameras(path, nil)
	if err != nil {
		return nil, err
	}
	for _, c := range cams {
		name := c.eps[0].path
		tracks := make([]*mp4.Track, len(c.eps))
		truncated := false
		for i, v := range c.eps {
			tracks[i] = v.track
			truncated = truncated || v.truncated
		}
		if len(c.eps) > 1 {
			name = fmt.Sprintf("%s/episode_*.mp4 (%d files)", filepath.Dir(name), len(c.eps))
		}
		v := videoReport(name, tracks)
		v.Truncated = truncated
		r.Videos = append(r.Videos, v)
	}
	r.recommendMP4()
	return r, nil
}

// videoReport describes a stream, or one camera's streams across its
// episode files: frames summed, the longest keyframe interval, the
// decodes per frame weighted by frames, the rate of the first.
func videoReport(name string, tracks []*mp4.Track) VideoReport {
	t0 := tracks[0]
	v := VideoReport{File: name, Stream: t0.Index, Codec: t0.Codec, Width: t0.Width, Height: t0.Height, FPS: t0.FrameRate()}
	var decodes float64
	for i, t := range tracks {
		lo, hi := t.DeltaRange()
		ms := func(d uint32) float64 { return 1e3 * float64(d) / float64(t.Timescale) }
		if i == 0 || ms(lo) < v.MinFrameMs {
			v.MinFrameMs = ms(lo)
		}
		v.MaxFrameMs = max(v.MaxFrameMs, ms(hi))
		v.Variable = v.Variable || t.VariableRate()
		v.Frames += t.Samples
		v.GOP = max(v.GOP, t.GOP())
		if t.Keyframes == nil {
			v.Keyframes += t.Samples
		} else {
			v.Keyframes += len(t.Keyframes)
		}
		decodes += t.DecodesPerFrame() * float64(t.Samples)
	}
	if v.Frames > 0 {
		v.DecodesPerFrame = decodes / float64(v.Frames)
	}
	return v
}

func (r *SourceReport) recommendMP4() {
	var worst VideoReport
	var variable, truncated []string
	for _, v := range r.Videos {
		if v.DecodesPerFrame > r.ReadAmp {
			r.ReadAmp, worst = v.DecodesPerFrame, v
		}
		if v.Variable {
			variable = append(variable, v.File)
		}
		if v.Truncated {
			truncated = append(truncated, v.File)
		}
	}
	var advice []string
	if len(truncated) > 0 {
		advice = append(advice, fmt.Sprintf("truncated: the index of %s places frames past the end of the file (a reader gets fewer frames than the index says)", strings.Join(truncated, ", ")))
	}
	switch {
	case len(r.Videos) == 0:
		advice = append(advice, "no video streams")
	case r.ReadAmp > 1.5:
		advice = append(advice, fmt.Sprintf("a random one-frame read decodes %.1f frames per frame returned: %s has a keyframe every %d frames. Re-encode with every frame a keyframe: ffmpeg -i IN.mp4 -c:v libx264 -g 1 OUT.mp4 (or -g 10: 5.5 frames per frame), keep the container open per worker, or store frames as 1-frame Zarr chunks: pipetrain data import %s DST",
			r.ReadAmp, worst.File, worst.GOP, r.Path))
	default:
		advice = append(advice, "every frame is a keyframe: a one-frame read decodes only that frame")
	}
	if len(variable) > 0 {
		advice = append(advice, fmt.Sprintf("variable frame rate in %s: frame k of one camera need not be frame k of another; pipetrain data import refuses it without --fps", strings.Join(variable, ", ")))
	}
	r.Recommendation = strings.Join(advice, ". ")
}

// WriteText prints the report for people.
func (r *SourceReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if r.Format == "hdf5" {
		fmt.Fprintf(w, "HDF5 file %s: %d datasets\n\n", r.Path, len(r.Datasets))
		fmt.Fprintln(tw, "DATASET\tDTYPE\tSHAPE\tCHUNKS\tFILTERS\tRAW\tSTORED\tONE-FRAME READ")
		for _, g := range groupDatasets(r.Datasets) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.path, g.dtype, g.shape, g.chunks, g.filters,
				dataset.HumanBytes(g.raw), dataset.HumanBytes(g.stored), g.amp())
		}
	} else {
		fmt.Fprintf(w, "MP4 %s: %d video streams\n\n", r.Path, len(r.Videos))
		fmt.Fprintln(tw, "FILE\tSTREAM\tCODEC\tSIZE\tFRAMES\tFPS\tKEYFRAME EVERY\tDECODES PER FRAME")
		for _, v := range r.Videos {
			fps, frames := fmt.Sprintf("%.2f", v.FPS), fmt.Sprint(v.Frames)
			if v.Variable {
				fps += fmt.Sprintf(" (variable: %.1f-%.1f ms)", v.MinFrameMs, v.MaxFrameMs)
			}
			if v.Truncated {
				frames += " (truncated)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%dx%d\t%s\t%s\t%d\t%.1f\n", v.File, v.Stream, v.Codec, v.Width, v.Height, frames, fps, v.GOP, v.DecodesPerFrame)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\npredicted read amplification of a one-frame read: %.1f\nrecommendation: %s\n", r.ReadAmp, r.Recommendation)
	return err
}

// demoPart is a robomimic demonstration's part of a dataset path.
var demoPart = regexp.MustCompile(`demo_\d+`)

// datasetRow is a text-report row: one dataset, or robomimic's datasets
// of one key across demonstrations (data/demo_*/obs/K (N)).
type datasetRow struct {
	path, dtype, shape, chunks, filters string
	raw, stored                         int64
	ampLo, ampHi                        float64
}

func (g datasetRow) amp() string {
	if g.ampLo == g.ampHi {
		return fmt.Sprintf("%.1fx", g.ampLo)
	}
	return fmt.Sprintf("%.1f-%.1fx", g.ampLo, g.ampHi)
}

// groupDatasets folds datasets whose paths differ only in demo_N, and
// whose type, filters and frame shape agree, into one row each, their
// first dimensions (frames, chunk frames) shown as a range.
func groupDatasets(ds []DatasetReport) []datasetRow {
	var rows []datasetRow
	index := map[string]int{}
	count := map[string]int{}
	lo, hi := map[string][2]int{}, map[string][2]int{}
	for _, d := range ds {
		chunks, filters := "contiguous", "-"
		if d.Chunks != nil {
			chunks = fmt.Sprint(d.Chunks[1:])
		}
		if len(d.Filters) > 0 {
			filters = strings.Join(d.Filters, ",")
		}
		pattern := demoPart.ReplaceAllString(d.Path, "demo_*")
		key := fmt.Sprint(pattern, d.DType, filters, d.Shape[min(1, len(d.Shape)):], chunks)
		i, ok := index[key]
		if !ok {
			i = len(rows)
			index[key] = i
			rows = append(rows, datasetRow{path: pattern, dtype: d.DType, filters: filters, ampLo: d.ReadAmp, ampHi: d.ReadAmp})
			lo[key], hi[key] = [2]int{math.MaxInt, math.MaxInt}, [2]int{-1, -1}
		}
		g := &rows[i]
		count[key]++
		g.raw += d.RawBytes
		g.stored += d.StoredBytes
		g.ampLo, g.ampHi = min(g.ampLo, d.ReadAmp), max(g.ampHi, d.ReadAmp)
		first := [2]int{-1, -1}
		if len(d.Shape) > 0 {
			first[0] = d.Shape[0]
		}
		if d.Chunks != nil {
			first[1] = d.Chunks[0]
		}
		l, h := lo[key], hi[key]
		for k := range first {
			l[k], h[k] = min(l[k], first[k]), max(h[k], first[k])
		}
		lo[key], hi[key] = l, h
		g.shape = withFirst(d.Shape, l[0], h[0])
		g.chunks = "contiguous"
		if d.Chunks != nil {
			g.chunks = withFirst(d.Chunks, l[1], h[1])
		}
		if count[key] > 1 {
			g.path = fmt.Sprintf("%s (%d)", pattern, count[key])
		}
	}
	return rows
}

// withFirst prints shape with its first dimension as the range lo..hi.
func withFirst(shape []int, lo, hi int) string {
	if len(shape) == 0 {
		return "[]"
	}
	first := fmt.Sprint(lo)
	if lo != hi {
		first = fmt.Sprintf("%d..%d", lo, hi)
	}
	rest := strings.Trim(fmt.Sprint(shape[1:]), "[]")
	if rest == "" {
		return "[" + first + "]"
	}
	return "[" + first + " " + rest + "]"
}
