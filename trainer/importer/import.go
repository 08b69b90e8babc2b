// Package importer converts the datasets robot-learning teams keep in
// other formats into pipetrain's replay-buffer layout (package episodes),
// as Zarr v3 with 1-frame camera chunks in shards: an HDF5 file
// (robomimic's data/demo_N layout, or a flat file of arrays) or MP4
// cameras (a directory of per-camera files, or LeRobot's per-episode
// files in a directory per camera). It also inspects those inputs: the
// chunking or keyframe interval, and what a one-frame read costs.
//
// HDF5 is read through package hdf5 (libhdf5); MP4 indexes through
// package mp4, and frames through ffmpeg's command line, one process per
// camera, its raw RGB output read from a pipe. Memory stays bounded by a
// shard of frames per camera, whatever the dataset's size.
package importer

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// Options configures Import.
type Options struct {
	// Keys names what to import: for robomimic files, observation keys
	// (agentview_image, robot0_eef_pos); for flat HDF5 files, dataset
	// paths; for MP4 directories, camera names (file names without .mp4,
	// or the directories of episode files). Empty: everything that maps.
	Keys []string
	// FPS is the frame rate recorded in DST's attributes. A variable-rate
	// video is refused without it; with it, its frames are taken as
	// stored, one per sample, at this nominal rate.
	FPS float64
	// EpisodeEnds is a file of exclusive episode end frames for MP4
	// cameras of one file each (whitespace- or comma-separated integers,
	// or a JSON array); empty: SRC/episode_ends.txt or .json if present,
	// else one episode. Per-episode files give their own.
	EpisodeEnds string
	// Codec is the zarr.NewCodec name of DST's compressor (blosc-lz4).
	Codec string
	// ShardFrames is the camera shard length; 0 picks up to 1,000 frames
	// within 64 MiB a shard.
	ShardFrames int
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
	// FFmpeg is the ffmpeg binary ("ffmpeg").
	FFmpeg string
}

// Summary is what Import did.
type Summary struct {
	Src, Dst string
	// Frames and Episodes are DST's frame count and episodes.
	Frames   int64
	Episodes int
	// Cameras are DST's camera keys in order, Sources where each came from.
	Cameras []string
	Sources []string
	// StateDim and ActionDim are data/state's and data/action's widths (0:
	// not written).
	StateDim  int
	ActionDim int
	// BytesIn is the size of SRC's files, BytesOut of DST's.
	BytesIn  int64
	BytesOut int64
	Seconds  float64
	// Notes say what was skipped or assumed.
	Notes []string
	// HasLoadable is true when DST has cameras, state and action: the
	// loader opens it.
	HasLoadable bool
}

// Command is the command to train on the imported store, or, when it has
// no state or action, what it lacks.
func (s *Summary) Command() string {
	if !s.HasLoadable {
		var missing []string
		if s.StateDim == 0 {
			missing = append(missing, "data/state")
		}
		if s.ActionDim == 0 {
			missing = append(missing, "data/action")
		}
		return fmt.Sprintf("%s has no %s, which the loader needs: add (T,D) float32 arrays from your episode tables, then: pipetrain train --data %s%s", s.Dst, strings.Join(missing, " and no "), s.Dst, s.camerasFlag())
	}
	return fmt.Sprintf("pipetrain train --data %s%s   (or: pipetrain bisect --data %s%s)", s.Dst, s.camerasFlag(), s.Dst, s.camerasFlag())
}

// camerasFlag is the --cameras flag the store needs ("" for the default
// four cameras).
func (s *Summary) camerasFlag() string {
	if strings.Join(s.Cameras, ",") == strings.Join(episodes.DefaultKeys.Cameras, ",") {
		return ""
	}
	return " --cameras " + strings.Join(s.Cameras, ",")
}

// WriteText prints the summary for people.
func (s *Summary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "imported %s -> %s: %d frames, %d episodes, %d cameras", s.Src, s.Dst, s.Frames, s.Episodes, len(s.Cameras))
	if s.StateDim > 0 {
		fmt.Fprintf(w, ", state %d, action %d", s.StateDim, s.ActionDim)
	}
	fmt.Fprintf(w, "\n  read %s, wrote %s (Zarr v3, 1-frame camera chunks in shards) in %.1fs\n",
		dataset.HumanBytes(s.BytesIn), dataset.HumanBytes(s.BytesOut), s.Seconds)
	for i, c := range s.Cameras {
		fmt.Fprintf(w, "  data/%s <- %s\n", c, s.Sources[i])
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	_, err := fmt.Fprintf(w, "next: %s\n", s.Command())
	return err
}

// plan is what an import writes: the arrays, each with its reader.
type plan struct {
	ends    []int64
	cams    []column
	state   *column // nil: none
	action  *column
	notes   []string
	bytesIn int64
	attrs   map[string]any
	close   func() error
}

// column is one DST array and where its rows come from.
type column struct {
	key    string // under data/
	source string // for people and errors
	shape  []int  // (T,H,W,3) uint8 or (T,D) float32
	open   func() (rowReader, error)
}

// rowReader streams an array's rows in order.
type rowReader interface {
	// read fills dst with the next len(dst)/rowBytes rows.
	read(dst []byte) error
	// finish checks the source ended where it should and releases it.
	finish() error
}

// Import converts src (an .h5/.hdf5 file, a directory of MP4 cameras or
// one .mp4 file) into a Zarr v3 replay buffer at dst, which must not
// exist. It writes
// into a temporary directory beside dst and renames it into place only
// when every array was written and read back; on failure nothing is left
// at dst.
func Import(src, dst string, o Options) (*Summary, error) {
	t0 := time.Now()
	if o.Codec == "" {
		o.Codec = "blosc-lz4"
	}
	if o.FFmpeg == "" {
		o.FFmpeg = "ffmpeg"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	codec, err := zarr.NewCodec(o.Codec)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if _, err := os.Stat(dst); err == nil {
		return nil, fmt.Errorf("import: destination %s already exists", dst)
	}
	p, err := planFor(src, o)
	if err != nil {
		return nil, err
	}
	defer p.close()
	p.recordSources()
	tmp := fmt.Sprintf("%s.tmp-%d", filepath.Clean(dst), os.Getpid())
	if err := write(p, tmp, codec, o); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("import: %w", err)
	}
	s := &Summary{Src: src, Dst: dst, Frames: p.ends[len(p.ends)-1], Episodes: len(p.ends), BytesIn: p.bytesIn,
		Notes: p.notes, Seconds: time.Since(t0).Seconds()}
	for _, c := range p.cams {
		s.Cameras = append(s.Cameras, c.key)
		s.Sources = append(s.Sources, c.source)
	}
	if p.state != nil {
		s.StateDim = p.state.shape[1]
	}
	if p.action != nil {
		s.ActionDim = p.action.shape[1]
	}
	s.HasLoadable = p.state != nil && p.action != nil
	s.BytesOut, _ = dirSize(dst)
	return s, nil
}

// recordSources adds where each array came from to the root attributes.
func (p *plan) recordSources() {
	sources := map[string]any{}
	for _, c := range p.cams {
		sources[c.key] = c.source
	}
	for _, c := range []*column{p.state, p.action} {
		if c != nil {
			sources[c.key] = c.source
		}
	}
	p.attrs["sources"] = sources
}

// planFor picks the reader for src.
func planFor(src string, o Options) (*plan, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	switch ext := strings.ToLower(filepath.Ext(src)); {
	case st.IsDir():
		return planMP4(src, o)
	case ext == ".h5" || ext == ".hdf5":
		return planHDF5(src, o)
	case ext == ".mp4":
		return planMP4(src, o)
	default:
		return nil, fmt.Errorf("import %s: want an .h5/.hdf5 file, a directory of .mp4 files or one .mp4 file", src)
	}
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}
