package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/importer"
)

const dataUsage = `usage: pipetrain data <command> [flags]

commands:
  gen      --out DIR --episodes N --frames N --chunk-frames N|auto --codec NAME
           [--format 2|3] [--shard-frames N]
           write a procedural 4-camera replay buffer
  inspect  DIR|FILE.h5|FILE.mp4 [--json]
           a Zarr store: its format, arrays, chunking, shards, codecs, files,
           sizes and the read amplification random training windows will
           cause, with a recommendation; an HDF5 file: each dataset's shape,
           dtype, chunks and filters and what a one-frame read decompresses;
           an MP4 file or a directory of them: each video stream's codec,
           size, frames, rate, keyframe interval and the frames a one-frame
           read decodes
  rechunk  SRC DST --chunk-frames N [--codec NAME] [--format 2|3] [--shard-frames N]
           copy SRC to DST with new chunking, in Zarr v2 or v3, optionally
           in v3 shards of N frames (SRC is never modified)
  import   SRC DST [--keys K1,K2] [--fps N] [--episode-ends FILE]
           convert an HDF5 file (robomimic's data/demo_N layout, or a flat
           file of arrays) or MP4 cameras (a directory of per-camera files,
           or LeRobot's episode_N.mp4 files per camera directory) into a
           Zarr v3 replay buffer with 1-frame camera chunks in shards

Zarr v2 and v3 stores are both read; which one a store is, is detected.

Run a command with -h for its flags.
`

// runData dispatches `pipetrain data ...`.
func runData(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, dataUsage)
		return fmt.Errorf("data: missing command")
	}
	switch args[0] {
	case "gen":
		return dataGen(args[1:])
	case "inspect":
		return dataInspect(args[1:])
	case "rechunk":
		return dataRechunk(args[1:])
	case "import":
		return dataImport(args[1:])
	case "-h", "--help", "help":
		fmt.Print(dataUsage)
		return nil
	}
	return fmt.Errorf("data: unknown command %q (want gen, inspect, rechunk or import)", args[0])
}

const codecHelp = "compressor: blosc-lz4 (zarr's default), blosc-lz4hc, blosc-zstd, blosc-blosclz, blosc-zlib, zstd, lz4, zlib, gzip or none"

func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("inspect DIR --json" as well as "inspect --json DIR").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func dataGen(args []string) error {
	fs := newFlagSet("data gen", "usage: pipetrain data gen --out DIR [flags]\n\nWrites a procedural replay buffer: 7 moving shapes whose (x, y) are the 14-dim\nstate, action[t] = state[t+1], four 128x128 cameras with different views.\n\n")
	out := fs.String("out", "", "output directory (must not exist or be empty)")
	eps := fs.Int("episodes", 20, "number of episodes")
	frames := fs.Int("frames", 200, "frames per episode")
	chunk := fs.String("chunk-frames", "1", "camera chunk length in frames, or auto for zarr's default chunk guess")
	codec := fs.String("codec", "blosc-lz4", codecHelp)
	seed := fs.Uint64("seed", 1, "random seed")
	lf := addLayoutFlags(fs, 2)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	cf := 0
	if *chunk != "auto" {
		n, err := strconv.Atoi(*chunk)
		if err != nil || n < 1 {
			return fmt.Errorf("data gen: --chunk-frames %q: want a positive integer or auto", *chunk)
		}
		cf = n
	}
	t0 := time.Now()
	err := dataset.Generate(dataset.GenOptions{Out: *out, Episodes: *eps, Frames: *frames, ChunkFrames: cf, Codec: *codec, Seed: *seed, Layout: lf.layout()})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d episodes x %d frames in %.1fs\n", *out, *eps, *frames, time.Since(t0).Seconds())
	return nil
}

// layoutFlags registers the Zarr format and shard flags of gen and rechunk.
type layoutFlags struct{ format, shards *int }

func addLayoutFlags(fs *flag.FlagSet, format int) *layoutFlags {
	help := "Zarr format to write: 2 or 3"
	if format == 0 {
		help += " (default: SRC's, or 3 with --shard-frames)"
	}
	return &layoutFlags{
		format: fs.Int("format", format, help),
		shards: fs.Int("shard-frames", 0, "Zarr v3 only: store camera chunks in shard files of this many frames (a multiple of --chunk-frames; 0: a file per chunk)"),
	}
}

func (l *layoutFlags) layout() dataset.Layout {
	return dataset.Layout{Format: *l.format, ShardFrames: *l.shards}
}

// windowFlags registers the keys and window flags shared by inspect and bench.
type windowFlags struct {
	cams, lowdim, action *string
	nobs, horizon, nact  *int
}

func addWindowFlags(fs *flag.FlagSet) *windowFlags {
	return &windowFlags{
		cams:    fs.String("cameras", strings.Join(episodes.DefaultKeys.Cameras, ","), "comma-separated camera keys under data/"),
		lowdim:  fs.String("lowdim", strings.Join(episodes.DefaultKeys.LowDim, ","), "comma-separated low-dim observation keys under data/"),
		action:  fs.String("action", episodes.DefaultKeys.Action, "action key under data/"),
		nobs:    fs.Int("n-obs", episodes.DefaultWindow.NObs, "observation steps per window"),
		horizon: fs.Int("horizon", episodes.DefaultWindow.Horizon, "action steps per window"),
		nact:    fs.Int("n-action", episodes.DefaultWindow.NActionSteps, "executed action steps (sets end padding)"),
	}
}

func (w *windowFlags) keys() episodes.Keys {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	return episodes.Keys{Cameras: split(*w.cams), LowDim: split(*w.lowdim), Action: *w.action}
}

func (w *windowFlags) window() episodes.WindowParams {
	return episodes.WindowParams{NObs: *w.nobs, Horizon: *w.horizon, NActionSteps: *w.nact}
}

func dataInspect(args []string) error {
	fs := newFlagSet("data inspect", "usage: pipetrain data inspect DIR|FILE.h5|FILE.mp4 [--json]\n\nDIR is a Zarr store, or a directory of MP4 cameras (as data import reads\nthem). The cache, batch and window flags apply to Zarr stores.\n\n")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cacheMB := fs.Int64("cache-mb", 0, "the loader's decoded-chunk cache to model, in MiB (0: 1024, train's default)")
	batch := fs.Int("batch", 0, "the batch size to model (0: 8, train's default)")
	wf := addWindowFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("data inspect: want one dataset directory or file, got %d arguments", len(pos))
	}
	if src, ok, err := inspectSource(pos[0]); ok || err != nil {
		if err != nil {
			return err
		}
		return printReport(src, *asJSON)
	}
	if *cacheMB < 0 || *batch < 0 {
		return fmt.Errorf("data inspect: --cache-mb %d and --batch %d must not be negative", *cacheMB, *batch)
	}
	r, err := dataset.InspectWith(pos[0], wf.keys(), wf.window(), dataset.InspectOptions{CacheBytes: *cacheMB << 20, Batch: *batch})
	if err != nil {
		return err
	}
	return printReport(r, *asJSON)
}

// report is an inspect report: Zarr's or a source file's.
type report interface{ WriteText(io.Writer) error }

func printReport(r report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(os.Stdout)
}

// inspectSource inspects p when it is an HDF5 or MP4 file or a directory
// that is not a Zarr store (MP4 cameras); ok is false for Zarr stores and
// other files.
func inspectSource(p string) (r report, ok bool, err error) {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".h5", ".hdf5":
		r, err = importer.InspectHDF5(p)
		return r, true, err
	case ".mp4":
		r, err = importer.InspectMP4(p)
		return r, true, err
	}
	st, err := os.Stat(p)
	if err != nil || !st.IsDir() {
		return nil, false, nil
	}
	for _, meta := range []string{"zarr.json", ".zgroup", ".zarray"} {
		if _, err := os.Stat(filepath.Join(p, meta)); err == nil {
			return nil, false, nil
		}
	}
	if r, err = importer.InspectMP4(p); err != nil {
		return nil, true, fmt.Errorf("data inspect %s: not a Zarr store (no zarr.json, .zgroup or .zarray), nor MP4 cameras: %w", p, err)
	}
	return r, true, nil
}

func dataRechunk(args []string) error {
	fs := newFlagSet("data rechunk", "usage: pipetrain data rechunk SRC DST --chunk-frames N [--codec NAME] [--format 2|3] [--shard-frames N]\n\nCopies SRC to DST with camera chunks of N whole frames (low-dim arrays get\nzarr's default chunking), in Zarr v2 or v3; with --shard-frames, camera chunks\ngo into v3 shard files of that many frames (1-frame reads, a file per shard).\nWrites to a temporary directory beside DST, verifies every slab, then renames;\nSRC is never modified.\n\n")
	chunk := fs.Int("chunk-frames", 1, "camera chunk length in frames")
	codec := fs.String("codec", "", "compressor for DST (default: keep each array's); "+codecHelp)
	lf := addLayoutFlags(fs, 0)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("data rechunk: want SRC and DST, got %d arguments", len(pos))
	}
	t0 := time.Now()
	if err := dataset.Rechunk(pos[0], pos[1], dataset.RechunkOptions{ChunkFrames: *chunk, Codec: *codec, Layout: lf.layout()}); err != nil {
		return err
	}
	shards := ""
	if *lf.shards > 0 {
		shards = fmt.Sprintf(", shards of %d frames", *lf.shards)
	}
	fmt.Printf("rechunked %s -> %s (chunk frames %d%s) in %.1fs, verified\n", pos[0], pos[1], *chunk, shards, time.Since(t0).Seconds())
	return nil
}

func dataImport(args []string) error {
	fs := newFlagSet("data import", `usage: pipetrain data import SRC DST [--keys K1,K2] [--fps N] [--episode-ends FILE]

Converts SRC into a Zarr v3 replay buffer at DST (which must not exist):
cameras as data/camera0.. with 1-frame chunks in shards, low-dim arrays
concatenated into data/state (float32), the action into data/action
(float32), and meta/episode_ends.

SRC is an .h5/.hdf5 file, a directory of MP4 cameras or one .mp4 file:
  robomimic HDF5   data/demo_N/obs/<key> and data/demo_N/actions: each demo an
                   episode (in the order of N); (T,H,W,3) uint8 keys are
                   cameras, (T,) and (T,D) number keys the state
  flat HDF5        (T,H,W,3) uint8 datasets are cameras, a dataset named
                   action or actions the action, other (T,) and (T,D) number
                   datasets the state; meta/episode_ends, if present, the
                   episodes (else one)
  MP4 directory    one camera per file (its first video stream), frames
                   aligned by index, decoded by ffmpeg; episodes from
                   --episode-ends or SRC/episode_ends.txt|.json, else one
                   (one .mp4 file: one camera, episodes from --episode-ends)
  episode files    a directory of episode_N.mp4 files is one camera, a
                   directory of such directories one camera each (LeRobot's
                   videos/chunk-000): the files are the episodes, in order
                   of N, their frame counts equal across cameras

Streams with bounded memory (a shard of frames per camera), writes into
DST.tmp-PID, reads every slab back and renames it into place at the end;
nothing is left at DST on failure.

`)
	keys := fs.String("keys", "", "comma-separated: robomimic observation keys, flat HDF5 dataset paths, or MP4 camera file names (default: all that map)")
	fps := fs.Float64("fps", 0, "frame rate recorded in DST (default: the videos'); lets a variable-rate video in, its frames taken as stored")
	ends := fs.String("episode-ends", "", "MP4 directories: a file of episode end frames (integers, or a JSON array)")
	codec := fs.String("codec", "blosc-lz4", "compressor for DST, one Zarr v3 has: blosc-lz4, blosc-lz4hc, blosc-zstd, blosc-blosclz, blosc-zlib, zstd, gzip or none")
	shards := fs.Int("shard-frames", 0, "camera shard length in frames (0: up to 1000 frames within 64 MiB)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("data import: want SRC and DST, got %d arguments", len(pos))
	}
	var kl []string
	if *keys != "" {
		kl = strings.Split(*keys, ",")
	}
	fmt.Printf("importing %s -> %s\n", pos[0], pos[1])
	s, err := importer.Import(pos[0], pos[1], importer.Options{Keys: kl, FPS: *fps, EpisodeEnds: *ends, Codec: *codec,
		ShardFrames: *shards, Progress: os.Stdout})
	if err != nil {
		return err
	}
	return s.WriteText(os.Stdout)
}
