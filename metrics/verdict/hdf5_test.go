package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// robomimic is a loader reading one frame per item from an HDF5 dataset
// chunked frames at a time (its read amplification amp), through a file
// the main process opened before the fork when forked is set.
func robomimic(frames, chunk int, amp float64, forked bool) *stage.LoaderStats {
	const frame = 84 * 84 * 3
	var fr int64
	if forked {
		fr = 1e4
	}
	return &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.97, Prefetch: 2, HDF5: []stage.HDF5Dataset{{
		File: "/data/robomimic.hdf5", Path: "/data/demo_0/obs/agentview_image", Shape: []int{frames, 84, 84, 3},
		Chunks: []int{chunk, 84, 84, 3}, DType: "uint8", ItemSize: 1, Filter: "gzip", FilterOpts: []int{4},
		CacheBytes: 1 << 20, Calls: 1e4, ChunksDecoded: 1e4, BytesDecoded: int64(amp * frame * 1e4), BytesReturned: frame * 1e4,
		ReadNs: 50e9, ReadAmp: amp, ForkedReads: fr, OpenedBeforeFork: forked}}}
}

// TestHDF5Verdicts plants an input-bound run whose workers read HDF5
// datasets: one chunk per trajectory (named, with the h5repack command),
// per-frame chunks (not flagged), a file opened before the fork (its own
// advice), a dataset without frames and an unnamed filter.
func TestHDF5Verdicts(t *testing.T) {
	const start = int64(1e18)
	waiting := run(start, 200, steadyTimes(8*ms1)).Summarize(0)
	actions := robomimic(150, 150, 150, false)
	a := &actions.HDF5[0]
	a.Path, a.Shape, a.Chunks, a.DType, a.ItemSize = "/data/demo_0/actions", []int{150, 7}, []int{150, 7}, "float32", 4
	a.BytesReturned, a.BytesDecoded = 28*1e4, 150*28*1e4
	unnamed := robomimic(150, 50, 50, false)
	unnamed.HDF5[0].Filter, unnamed.HDF5[0].FilterOpts, unnamed.HDF5[0].Shuffle = "32001", []int{0, 0}, true
	two := robomimic(150, 150, 150, false)
	other := two.HDF5[0]
	other.Path, other.BytesDecoded = "/data/demo_1/obs/agentview_image", other.BytesDecoded/2
	two.HDF5 = append(two.HDF5, other)
	for _, tc := range []struct {
		name          string
		loader        *stage.LoaderStats
		contains, not []string
	}{
		{"one chunk per trajectory: named with the h5repack command", robomimic(150, 150, 150, false), []string{
			"the chunking of /data/demo_0/obs/agentview_image in robomimic.hdf5 (one chunk of 150x84x84x3 holds all 150 frames, gzip 4) decompresses 150x the bytes each read returns (1 frame per read)",
			"`h5repack -l /data/demo_0/obs/agentview_image:CHUNK=1x84x84x3 /data/robomimic.hdf5 /data/robomimic-rechunked.hdf5`",
			"`pipetrain data import /data/robomimic.hdf5 /data/robomimic.zarr`"}, []string{"fork"}},
		{"per-frame chunks: not flagged", robomimic(150, 1, 1, false), []string{"raise num_workers"}, []string{"h5repack", "chunking", "fork"}},
		{"opened before the fork: its own advice", robomimic(150, 1, 1, true),
			[]string{"robomimic.hdf5 is opened before the DataLoader's workers fork", "worker_init_fn", "lazily on the first __getitem__"}, []string{"h5repack"}},
		{"amplified and opened before the fork: both", robomimic(150, 150, 150, true), []string{"h5repack -l", "worker_init_fn"}, nil},
		{"a 2-D dataset: read it whole", actions, []string{"(1 frame per read): it is 4.1 KiB: read it whole into memory once", "chunks of 1x7"}, []string{"h5repack"}},
		{"an unnamed filter by its id", unnamed, []string{"chunks of 50x84x84x3, shuffle+filter 32001", "50x"}, nil},
		{"two datasets of one file in one command", two, []string{
			"h5repack -l /data/demo_0/obs/agentview_image,/data/demo_1/obs/agentview_image:CHUNK=1x84x84x3 /data/robomimic.hdf5"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Inputs{Summary: waiting, Loader: tc.loader, Live: true})
			if v.Kind != InputBound {
				t.Fatalf("kind = %s (%s), want input-bound", v.Kind, v)
			}
			t.Logf("%s", v)
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			for _, c := range tc.not {
				if strings.Contains(v.String(), c) {
					t.Errorf("verdict %q has %q", v, c)
				}
			}
		})
	}
}

// TestHDF5BesideZarr: the amplified source whose reads took the most time
// is the one named, whatever its format.
func TestHDF5BesideZarr(t *testing.T) {
	l := robomimic(150, 150, 150, false)
	l.Zarr = []stage.ZarrArray{{Store: "/d/x.zarr", Path: "data/img", Shape: []int{1000, 96, 96, 3}, Chunks: []int{100, 96, 96, 3},
		ItemSize: 1, Calls: 10, BytesReturned: 10, BytesDecoded: 1000, ReadAmp: 100, ReadNs: 1e9}}
	if c, ok := worstRead(l); !ok || !strings.Contains(c.Why, "robomimic.hdf5") {
		t.Errorf("worst read %+v, want the HDF5 dataset (50 s of reads against 1 s)", c)
	}
	l.Zarr[0].ReadNs = 100e9
	if c, ok := worstRead(l); !ok || !strings.Contains(c.Why, "data/img") {
		t.Errorf("worst read %+v, want the Zarr array (100 s of reads against 50 s)", c)
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{"/d/a.h5": "/d/a.h5", "/my data/a.h5": "'/my data/a.h5'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
