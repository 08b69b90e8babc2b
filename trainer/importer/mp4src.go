package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pipetop/pipetop/trainer/mp4"
)

// video is one MP4 file and its (first) video track.
type video struct {
	path  string
	track *mp4.Track
	more  int // the file's other video tracks, left out
	// truncated is true when the track's sample data lies past the end
	// of the file.
	truncated bool
	size      int64
}

// camera is one camera's videos: one file for the whole camera, or one
// per episode, in order.
type camera struct {
	name string // the file name without .mp4, or the directory's name
	eps  []video
}

func (c camera) frames() int {
	n := 0
	for _, v := range c.eps {
		n += v.track.Samples
	}
	return n
}

// episodeFile matches LeRobot's per-episode video files.
var episodeFile = regexp.MustCompile(`^episode_(\d+)\.mp4$`)

// planMP4 plans the import of the MP4 cameras in src (see openCameras),
// or of the one camera src is, frames aligned by index.
func planMP4(src string, o Options) (*plan, error) {
	dir, single := src, strings.EqualFold(filepath.Ext(src), ".mp4")
	var cams []camera
	var err error
	if single {
		dir = filepath.Dir(src)
		cams = []camera{{name: strings.TrimSuffix(filepath.Base(src), filepath.Ext(src)), eps: videosOf(dir, []string{filepath.Base(src)})}}
		err = cams[0].eps[0].open()
	} else {
		cams, err = openCameras(src, o.Keys)
	}
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	p := &plan{close: func() error { return nil }}
	if err := checkCameras(dir, cams, o, p); err != nil {
		return nil, err
	}
	first := cams[0]
	T := first.frames()
	if T == 0 {
		return nil, fmt.Errorf("import %s: %s has no frames", dir, first.eps[0].path)
	}
	if len(first.eps) > 1 {
		var end int64
		for _, v := range first.eps {
			end += int64(v.track.Samples)
			p.ends = append(p.ends, end)
		}
	} else if p.ends, err = mp4EpisodeEnds(dir, o.EpisodeEnds, !single, T); err != nil {
		return nil, err
	} else if len(p.ends) == 1 {
		p.notes = append(p.notes, "no episode-ends file (--episode-ends, or episode_ends.txt/.json in SRC): one episode")
	}
	fps := o.FPS
	if fps <= 0 {
		fps = first.eps[0].track.FrameRate()
	}
	for i, c := range cams {
		v := c.eps[0]
		where := v.path
		if len(c.eps) > 1 {
			where = fmt.Sprintf("%s/episode_*.mp4 (%d files)", filepath.Dir(v.path), len(c.eps))
		}
		p.cams = append(p.cams, column{key: fmt.Sprintf("camera%d", i),
			source: fmt.Sprintf("%s (stream %d, %s %dx%d, %d frames, keyframe every %d)", where, v.track.Index, v.track.Codec, v.track.Width, v.track.Height, T, v.track.GOP()),
			shape:  []int{T, v.track.Height, v.track.Width, 3}, open: func() (rowReader, error) { return &videoRows{bin: o.FFmpeg, eps: c.eps}, nil }})
	}
	p.attrs = map[string]any{"importer": "pipetrain data import", "source": src, "layout": "mp4", "fps": fps}
	return p, nil
}

// checkCameras checks the cameras can be aligned by frame index: the same
// frame counts (per episode file, when there are several), one frame size
// and constant rates (unless o.FPS); it counts their bytes into p.
func checkCameras(dir string, cams []camera, o Options, p *plan) error {
	first := cams[0]
	ref := first.eps[0].track
	for _, c := range cams {
		if len(c.eps) != len(first.eps) {
			return fmt.Errorf("import %s: cameras of different episode counts: %s has %d episode files, %s has %d", dir, first.name, len(first.eps), c.name, len(c.eps))
		}
		for i, v := range c.eps {
			t, f := v.track, first.eps[i]
			switch {
			case v.truncated:
				return fmt.Errorf("import %s: stream %d: the index (stts/stsz/stco) places its %d frames' data up to byte %d, but the file has %d bytes: the video is shorter than its index (truncated media data)", v.path, t.Index, t.Samples, t.DataEnd, v.size)
			case t.Samples != f.track.Samples:
				return fmt.Errorf("import %s: cameras of different frame counts: %s has %d frames, %s has %d: frames cannot be aligned by index (cut or re-encode them to one length)", dir, f.path, f.track.Samples, v.path, t.Samples)
			case t.Width != ref.Width || t.Height != ref.Height:
				return fmt.Errorf("import %s: %s is %dx%d, %s is %dx%d: the loader needs every camera in one size (scale with ffmpeg -vf scale=W:H, or choose cameras with --keys)", dir, v.path, t.Width, t.Height, first.eps[0].path, ref.Width, ref.Height)
			case t.VariableRate() && o.FPS <= 0:
				lo, hi := t.DeltaRange()
				return fmt.Errorf("import %s: stream %d (%s) has a variable frame rate (frame durations %.1f to %.1f ms): its frames are not evenly spaced in time, so frame k of one camera need not be frame k of another. Re-encode at a constant rate (ffmpeg -i %s -fps_mode cfr -r N OUT.mp4), or pass --fps N to take its frames as stored, one per sample, at a nominal N fps",
					v.path, t.Index, t.Codec, 1e3*float64(lo)/float64(t.Timescale), 1e3*float64(hi)/float64(t.Timescale), v.path)
			}
			if st, err := os.Stat(v.path); err == nil {
				p.bytesIn += st.Size()
			}
			if v.more > 0 {
				p.notes = append(p.notes, fmt.Sprintf("%s has %d more video streams: only its first (stream %d) is imported", v.path, v.more, t.Index))
			}
		}
	}
	return nil
}

// openCameras finds the cameras under dir and parses every file's index:
// a directory of per-camera files (one camera per file), a directory of
// per-episode files episode_N.mp4 of one camera (LeRobot's), or a
// directory of camera directories of per-episode files (LeRobot's
// videos/chunk-NNN). keys picks cameras by name.
func openCameras(dir string, keys []string) ([]camera, error) {
	files, subdirs, err := listMP4(dir)
	if err != nil {
		return nil, err
	}
	var cams []camera
	switch {
	case len(files) > 0 && allEpisodes(files):
		cams = []camera{{name: filepath.Base(dir), eps: videosOf(dir, files)}}
	case len(files) > 0:
		for _, f := range files {
			cams = append(cams, camera{name: strings.TrimSuffix(f, filepath.Ext(f)), eps: videosOf(dir, []string{f})})
		}
	default:
		for _, d := range subdirs {
			sub := filepath.Join(dir, d)
			if fs, _, err := listMP4(sub); err == nil && len(fs) > 0 && allEpisodes(fs) {
				cams = append(cams, camera{name: d, eps: videosOf(sub, fs)})
			}
		}
	}
	if len(cams) == 0 {
		return nil, fmt.Errorf("%s: no .mp4 files in the directory (nor camera directories of episode_N.mp4 files)", dir)
	}
	if cams, err = pickCameras(dir, cams, keys); err != nil {
		return nil, err
	}
	for _, c := range cams {
		for i := range c.eps {
			if err := c.eps[i].open(); err != nil {
				return nil, err
			}
		}
	}
	return cams, nil
}

// listMP4 lists dir's .mp4 files and subdirectories, sorted.
func listMP4(dir string) (files, subdirs []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		switch n := e.Name(); {
		case e.IsDir():
			subdirs = append(subdirs, n)
		case strings.EqualFold(filepath.Ext(n), ".mp4"):
			files = append(files, n)
		}
	}
	sort.Strings(files)
	sort.Strings(subdirs)
	return files, subdirs, nil
}

// allEpisodes reports whether every file is an episode_N.mp4, and sorts
// them by N.
func allEpisodes(files []string) bool {
	for _, f := range files {
		if !episodeFile.MatchString(f) {
			return false
		}
	}
	num := func(f string) int {
		n, _ := strconv.Atoi(episodeFile.FindStringSubmatch(f)[1])
		return n
	}
	sort.SliceStable(files, func(i, j int) bool { return num(files[i]) < num(files[j]) })
	return true
}

func videosOf(dir string, files []string) []video {
	out := make([]video, len(files))
	for i, f := range files {
		out[i] = video{path: filepath.Join(dir, f)}
	}
	return out
}

// pickCameras keeps the cameras keys names, in the keys' order.
func pickCameras(dir string, cams []camera, keys []string) ([]camera, error) {
	if len(keys) == 0 {
		return cams, nil
	}
	var names []string
	byName := map[string]camera{}
	for _, c := range cams {
		byName[c.name] = c
		names = append(names, c.name)
	}
	var picked []camera
	for _, k := range keys {
		c, ok := byName[strings.TrimSuffix(k, ".mp4")]
		if !ok {
			return nil, fmt.Errorf("%s: no camera %s (have: %s)", dir, k, strings.Join(names, ", "))
		}
		picked = append(picked, c)
	}
	return picked, nil
}

// open parses the file's index and picks its first video track.
func (v *video) open() error {
	f, err := mp4.Open(v.path)
	if err != nil {
		return err
	}
	tracks := f.Video()
	if len(tracks) == 0 {
		return fmt.Errorf("%s has no video track", v.path)
	}
	v.track, v.more = tracks[0], len(tracks)-1
	v.truncated, v.size = f.Truncated(v.track), f.Size
	return nil
}

// mp4EpisodeEnds reads the episode ends from file, or (with dirEnds) from
// dir/episode_ends.txt or .json, or makes one episode of T frames.
func mp4EpisodeEnds(dir, file string, dirEnds bool, T int) ([]int64, error) {
	if file == "" && dirEnds {
		for _, n := range []string{"episode_ends.txt", "episode_ends.json"} {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				file = filepath.Join(dir, n)
			}
		}
	}
	if file == "" {
		return []int64{int64(T)}, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("import: episode ends: %w", err)
	}
	ends, err := parseEnds(data)
	if err != nil {
		return nil, fmt.Errorf("import: episode ends %s: %w", file, err)
	}
	var prev int64
	for i, e := range ends {
		if e <= prev {
			return nil, fmt.Errorf("import: episode ends %s: entry %d is %d after %d: must be increasing and positive", file, i, e, prev)
		}
		prev = e
	}
	if prev != int64(T) {
		return nil, fmt.Errorf("import: episode ends %s end at frame %d, but the videos have %d frames", file, prev, T)
	}
	return ends, nil
}

// parseEnds reads a JSON array of integers or integers separated by
// whitespace or commas.
func parseEnds(data []byte) ([]int64, error) {
	var ends []int64
	if s := strings.TrimSpace(string(data)); strings.HasPrefix(s, "[") {
		if err := json.Unmarshal(data, &ends); err != nil {
			return nil, err
		}
	} else {
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, err
			}
			ends = append(ends, v)
		}
	}
	if len(ends) == 0 {
		return nil, errors.New("no episode ends in the file")
	}
	return ends, nil
}
