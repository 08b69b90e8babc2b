package verdict

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
)

// ReopenShare is the opens per read at or above which a video file is
// said to be opened for every read (docs/verdicts.md, video reads).
const ReopenShare = 0.9

// videoAmplified is the video stream that decodes the most frames at
// HighReadAmp or more frames per frame returned; nil when none does.
func videoAmplified(l *stage.LoaderStats) *stage.VideoStream {
	var best *stage.VideoStream
	for i := range l.Video {
		v := &l.Video[i]
		if v.ReadAmp >= HighReadAmp && (best == nil || v.FramesDecoded > best.FramesDecoded) {
			best = v
		}
	}
	return best
}

// videoCause is the loader's most amplified video stream as a read cause:
// the frames it decodes per frame returned and why (a long keyframe
// interval, or reads that decode from the start of the file), with the
// re-encode or seek that fixes it.
func videoCause(l *stage.LoaderStats) (readCause, bool) {
	v := videoAmplified(l)
	if v == nil {
		return readCause{}, false
	}
	who := "workers decode"
	if l.Workers == 0 {
		who = "the DataLoader decodes"
	}
	what := v.Name()
	if v.Codec != "" {
		what += " (" + v.Codec + ")"
	}
	why := fmt.Sprintf("%s %.0f frames per frame returned: %s ", who, v.ReadAmp, what)
	var fix string
	switch {
	case v.Calls > 0 && 2*v.Seeks < v.Calls:
		why += fmt.Sprintf("is decoded from the start of the file (%d seeks in %d reads)", v.Seeks, v.Calls)
		fix = "seek to the frame before decoding (`container.seek(pts, stream=stream)` lands on the keyframe at or before it), then decode up to the frame"
	case v.GOP > 0:
		why += fmt.Sprintf("has a keyframe every %d frames", v.GOP)
		fix = reencodeHow(v)
	default:
		why += "has keyframes far apart (a seek decodes from the keyframe at or before the frame)"
		fix = reencodeHow(v)
	}
	if v.OpensPerCall() >= ReopenShare {
		why += " and is opened for every read"
		fix += "; " + reopenAdvice(v)
	}
	return readCause{Why: why, Amp: v.ReadAmp, ReadNs: v.TimeNs(), Fix: fix}, true
}

// reopenAdvice is the advice for a file opened for every read: keep it
// open per worker; torchvision's readers, which open it themselves, are
// named.
func reopenAdvice(v *stage.VideoStream) string {
	if 2*v.TorchvisionOpens >= v.Opens {
		return "torchvision opens it on every read (`read_video` opens the file each call): decode with PyAV directly, the container opened once per worker (`av.open` in worker_init_fn or on the first `__getitem__`, then `container.seek` and `container.decode`)"
	}
	return "keep the container open per worker (open it once in each worker, not in `__getitem__`)"
}

// episodeFile is the name of one episode's video in LeRobot's layout
// (videos/chunk-000/CAMERA/episode_000000.mp4).
var episodeFile = regexp.MustCompile(`^episode_[0-9]+\.mp4$`)

// chunkDir is the name of LeRobot's directory of camera directories
// (videos/chunk-000).
var chunkDir = regexp.MustCompile(`^chunk-[0-9]+$`)

// importDir is the directory pipetrain data import converts for file, as
// it takes them: the file's own (a directory of per-camera files, or the
// episode folder of one camera's episode_N.mp4 files), or, for an episode
// file of LeRobot's layout (videos/chunk-NNN/CAMERA/episode_N.mp4), the
// chunk directory, which holds every camera's episode folder and nothing
// else. Never a directory above the episode folder otherwise: that would
// import whatever else it holds.
func importDir(file string) string {
	dir := filepath.Dir(file)
	if episodeFile.MatchString(filepath.Base(file)) && chunkDir.MatchString(filepath.Base(filepath.Dir(dir))) {
		return filepath.Dir(dir)
	}
	return dir
}

// reencodeHow says how to re-encode v with a keyframe on every frame, or
// convert its directory of camera files to 1-frame Zarr chunks.
func reencodeHow(v *stage.VideoStream) string {
	in, out, dir, dst := "IN", "OUT", "DIR", "DST.zarr"
	if filepath.IsAbs(v.File) {
		ext := filepath.Ext(v.File)
		in, out = v.File, strings.TrimSuffix(v.File, ext)+"-g1"+ext
		dir = importDir(v.File)
		dst = dir + ".zarr"
	}
	return fmt.Sprintf("re-encode it with a keyframe on every frame: `ffmpeg -i %s -c:v libx264 -g 1 -crf 18 %s` "+
		"(a read then decodes 1 frame, in a file often several times larger; `-g 10` is the middle ground: 5.5 frames a read, a smaller file), "+
		"or store the camera files' frames as 1-frame Zarr chunks: `pipetrain data import %s %s`", in, out, dir, dst)
}
