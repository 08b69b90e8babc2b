package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pipetop/pipetop/trainer/mp4"
)

// video is one camera's file and its video track.
type video struct {
	path  string
	name  string // the file name without .mp4
	track *mp4.Track
	more  int // the file's other video tracks, left out
}

// planMP4 plans the import of a directory of per-camera MP4 files, one
// camera per file (its first video track), frames aligned by index;
// dirEnds takes the episode ends from dir/episode_ends.txt or .json when
// o names no file.
func planMP4(dir string, o Options, dirEnds bool) (*plan, error) {
	vids, err := openVideos(dir, o.Keys)
	if err != nil {
		return nil, err
	}
	first := vids[0]
	p := &plan{close: func() error { return nil }}
	for _, v := range vids {
		t := v.track
		switch {
		case t.Samples != first.track.Samples:
			return nil, fmt.Errorf("import %s: cameras of different frame counts: %s has %d frames, %s has %d: frames cannot be aligned by index (cut or re-encode them to one length)", dir, first.path, first.track.Samples, v.path, t.Samples)
		case t.Width != first.track.Width || t.Height != first.track.Height:
			return nil, fmt.Errorf("import %s: %s is %dx%d, %s is %dx%d: the loader needs every camera in one size (scale with ffmpeg -vf scale=W:H, or choose cameras with --keys)", dir, v.path, t.Width, t.Height, first.path, first.track.Width, first.track.Height)
		case t.VariableRate() && o.FPS <= 0:
			lo, hi := t.DeltaRange()
			return nil, fmt.Errorf("import %s: stream %d (%s) has a variable frame rate (frame durations %.1f to %.1f ms): its frames are not evenly spaced in time, so frame k of one camera need not be frame k of another. Re-encode at a constant rate (ffmpeg -i %s -fps_mode cfr -r N OUT.mp4), or pass --fps N to take its frames as stored, one per sample, at a nominal N fps",
				v.path, t.Index, t.Codec, 1e3*float64(lo)/float64(t.Timescale), 1e3*float64(hi)/float64(t.Timescale), v.path)
		}
		if st, err := os.Stat(v.path); err == nil {
			p.bytesIn += st.Size()
		}
		if v.more > 0 {
			p.notes = append(p.notes, fmt.Sprintf("%s has %d more video streams: only its first (stream %d) is imported", v.path, v.more, t.Index))
		}
	}
	T := first.track.Samples
	if T == 0 {
		return nil, fmt.Errorf("import %s: %s has no frames", dir, first.path)
	}
	if p.ends, err = mp4EpisodeEnds(dir, o.EpisodeEnds, dirEnds, T); err != nil {
		return nil, err
	}
	if len(p.ends) == 1 {
		p.notes = append(p.notes, "no episode-ends file (--episode-ends, or episode_ends.txt/.json in SRC): one episode")
	}
	fps := o.FPS
	if fps <= 0 {
		fps = first.track.FrameRate()
	}
	for i, v := range vids {
		key := fmt.Sprintf("camera%d", i)
		p.cams = append(p.cams, column{key: key, source: fmt.Sprintf("%s (stream %d, %s %dx%d, %d frames, keyframe every %d)", v.path, v.track.Index, v.track.Codec, v.track.Width, v.track.Height, T, v.track.GOP()),
			shape: []int{T, v.track.Height, v.track.Width, 3}, open: func() (rowReader, error) { return startFFmpeg(o.FFmpeg, v) }})
	}
	p.attrs = map[string]any{"importer": "pipetrain data import", "source": dir, "layout": "mp4", "fps": fps}
	return p, nil
}

// openVideos parses the index of every .mp4 file in dir (or of those keys
// names), sorted by name.
func openVideos(dir string, keys []string) ([]video, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.EqualFold(filepath.Ext(n), ".mp4") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(keys) > 0 {
		var pick []string
		for _, k := range keys {
			n := k
			if !strings.EqualFold(filepath.Ext(k), ".mp4") {
				n = k + ".mp4"
			}
			if !contains(names, n) {
				return nil, fmt.Errorf("import %s: no camera file %s (have: %s)", dir, n, strings.Join(names, ", "))
			}
			pick = append(pick, n)
		}
		names = pick
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("import %s: no .mp4 files in the directory", dir)
	}
	var out []video
	for _, n := range names {
		p := filepath.Join(dir, n)
		f, err := mp4.Open(p)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		v := f.Video()
		if len(v) == 0 {
			return nil, fmt.Errorf("import: %s has no video track", p)
		}
		out = append(out, video{path: p, name: strings.TrimSuffix(n, filepath.Ext(n)), track: v[0], more: len(v) - 1})
	}
	return out, nil
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
