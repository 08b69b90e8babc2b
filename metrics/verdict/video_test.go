package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// videoLoader is a PyTorch loader whose workers read one frame of
// /data/cams/cam0.mp4 per sample: 1,000 reads with a keyframe every gop
// frames, each returning one frame from a seek (seeks) after opening the
// file (opens).
func videoLoader(gop int, amp float64, opens, seeks int64) *stage.LoaderStats {
	const reads = 1000
	v := stage.VideoStream{File: "/data/cams/cam0.mp4", Codec: "h264", Width: 96, Height: 96, Rate: 30, Frames: 300,
		GOP: gop, Keyframes: 300 / gop, Opens: opens, Calls: reads, Seeks: seeks,
		FramesDecoded: int64(amp * reads), FramesReturned: reads, BytesUsed: reads * 96 * 96 * 3,
		DecodeNs: int64(amp*reads) * 200e3, ConvertNs: reads * 50e3, ReadNs: opens * 300e3, ReadAmp: amp}
	v.BytesDecoded = v.FramesDecoded * 96 * 96 * 3
	return &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 1, WorkerBusyEach: []float64{1, 1}, Prefetch: 2, Cores: 2,
		Video: []stage.VideoStream{v}, BytesDecoded: v.BytesDecoded, BytesUsed: v.BytesUsed, ReadAmp: amp}
}

// torchvisionOpens is l with n of its stream's opens made by torchvision.
func torchvisionOpens(l *stage.LoaderStats, n int64) *stage.LoaderStats {
	l.Video[0].TorchvisionOpens = n
	return l
}

func TestVideoVerdicts(t *testing.T) {
	const start = int64(1e18)
	steady := run(start, 200, steadyTimes(20*ms1)).Summarize(0)
	reencode := "`ffmpeg -i /data/cams/cam0.mp4 -c:v libx264 -g 1 -crf 18 /data/cams/cam0-g1.mp4`"
	for _, tc := range []struct {
		name     string
		loader   *stage.LoaderStats
		contains []string
		lacks    []string
	}{
		{"GOP 250 opened for every read: re-encode and keep it open", videoLoader(250, 108.8, 1000, 1000), []string{
			"workers decode 109 frames per frame returned: /data/cams/cam0.mp4 (h264) has a keyframe every 250 frames and is opened for every read",
			reencode, "`-g 10` is the middle ground", "`pipetrain data import /data/cams /data/cams.zarr`",
			"keep the container open per worker", "then, if the workers still cannot keep up"}, []string{"rechunk"}},
		{"torchvision opens it each read: PyAV kept open instead", torchvisionOpens(videoLoader(250, 108.8, 1001, 1000), 1000), []string{
			"is opened for every read", "torchvision opens it on every read (`read_video` opens the file each call): decode with PyAV directly", reencode},
			[]string{"keep the container open per worker"}},
		{"GOP 250 kept open: no open advice", videoLoader(250, 108.8, 2, 1000), []string{"has a keyframe every 250 frames:", reencode},
			[]string{"opened for every read", "keep the container open"}},
		{"decoding from the start: seek first", videoLoader(10, 150.5, 1000, 0), []string{
			"is decoded from the start of the file (0 seeks in 1000 reads)", "`container.seek(pts, stream=stream)`"}, []string{"ffmpeg"}},
		{"keyframes not yet seen twice", videoLoader(300, 40, 2, 1000), []string{"has a keyframe every 300 frames"}, nil},
		{"healthy GOP 1: no video advice", videoLoader(1, 1, 1000, 1000), []string{"raise num_workers"},
			[]string{"ffmpeg", "frames per frame", "pipetrain", "container"}},
		{"GOP 4 under the threshold: no video advice", videoLoader(4, 2.5, 2, 1000), []string{"raise num_workers"}, []string{"ffmpeg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Inputs{Summary: steady, Loader: tc.loader})
			if v.Kind != InputBound {
				t.Fatalf("got %s (%s), want %s", v.Kind, v, InputBound)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			for _, c := range tc.lacks {
				if strings.Contains(v.String(), c) {
					t.Errorf("verdict %q has %q", v, c)
				}
			}
		})
	}
}

// TestVideoCauseUnknownFile: a file object's stream (no path) gets the
// commands with placeholders, and an unknown keyframe interval is said so.
func TestVideoCauseUnknownFile(t *testing.T) {
	l := videoLoader(250, 50, 1, 1000)
	l.Video[0].File, l.Video[0].GOP, l.Video[0].Stream = "<none>", 0, 1
	c, ok := videoCause(l)
	if !ok {
		t.Fatal("no cause")
	}
	for _, want := range []string{"<none> stream 1 (h264) has keyframes far apart", "`ffmpeg -i IN -c:v libx264 -g 1 -crf 18 OUT`", "`pipetrain data import DIR DST.zarr`"} {
		if !strings.Contains(c.Why+": "+c.Fix, want) {
			t.Errorf("%q lacks %q", c.Why+": "+c.Fix, want)
		}
	}
}

// TestWorstReadAcrossFormats: the amplified source whose reads took the
// most time is the one cited, whatever its format.
func TestWorstReadAcrossFormats(t *testing.T) {
	l := videoLoader(250, 108.8, 1000, 1000)
	z := stage.ZarrArray{Store: "/d/x.zarr", Path: "imgs", Shape: []int{100, 8, 8}, Chunks: []int{100, 8, 8}, ItemSize: 1,
		Calls: 10, BytesReturned: 640, BytesDecoded: 64000, ReadAmp: 100}
	for _, tc := range []struct {
		zarrNs int64
		want   string
	}{{1, "cam0.mp4"}, {1e15, "imgs"}} {
		z.ReadNs = tc.zarrNs
		l.Zarr = []stage.ZarrArray{z}
		c, ok := worstRead(l)
		if !ok || !strings.Contains(c.Why, tc.want) {
			t.Errorf("zarr reads %d ns: cause %q, want %s", tc.zarrNs, c.Why, tc.want)
		}
	}
}

// LeRobot keeps one directory per camera of per-episode files: the import
// advice names the chunk directory above them, which holds every camera;
// episode files elsewhere are imported from their own episode folder, never
// from the directory above it (the issue's: the whole dataset directory).
func TestImportDirOfEpisodeFiles(t *testing.T) {
	for file, want := range map[string]string{
		"/data/lerobot/videos/chunk-000/observation.images.top/episode_000007.mp4": "/data/lerobot/videos/chunk-000",
		"/data/plant/videos/episode_000003.mp4":                                    "/data/plant/videos",
		"/data/plant/episodes/top/episode_000003.mp4":                              "/data/plant/episodes/top",
		"/data/cams/cam0.mp4":                                                      "/data/cams",
	} {
		if got := importDir(file); got != want {
			t.Errorf("importDir(%q) = %q, want %q", file, got, want)
		}
	}
}
