package loader

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

func TestLoaderPane(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stats         stage.LoaderStats
		want, wantNot []string
	}{
		{"pipetrain loader", stage.LoaderStats{Workers: 2, WorkerBusy: 0.5, QueueDepth: 2, QueueCap: 4, CacheHitRate: 0.9, ReadAmp: 1.2},
			[]string{"2 workers busy 50 %", "queue 2/4", "cache hit 90 %", "read amp 1.2×"}, []string{"prefetch"}},
		{"torch DataLoader", stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.9, WorkerBusyEach: []float64{0.8, 1}, QueueCap: 4, Prefetch: 2, PinMemory: true},
			[]string{"2 workers busy 90 %", "each 80 % 100 %", "prefetch 2", "pin_memory on"}, []string{"cache hit", "read amp"}},
		{"torch DataLoader reading zarr", stage.LoaderStats{Source: "torch", Workers: 2, ReadAmp: 2000, Zarr: []stage.ZarrArray{{Path: "data/camera0", ReadAmp: 2000}}},
			[]string{"zarr read amp 2000.0×"}, []string{"cache hit"}},
		{"torch DataLoader reading hdf5", stage.LoaderStats{Source: "torch", Workers: 2, ReadAmp: 150, HDF5: []stage.HDF5Dataset{{Path: "/data/img", BytesDecoded: 1500, BytesReturned: 10}}},
			[]string{"hdf5 read amp 150.0×"}, []string{"zarr read amp"}},
		{"torch DataLoader sending float32 images", stage.LoaderStats{Source: "torch", Workers: 2, Trip: &stage.BatchTrip{Batches: 10, BytesPerBatch: 24 << 20,
			Tensors: []stage.TripTensor{{Key: "['image']", DType: "float32", Shape: []int{32, 128, 128, 3}, Bytes: 24 << 20, Uint8Factor: 4, Uint8Scale: 1}}}},
			[]string{"batch 24.0 MiB float 4x uint8"}, nil},
		{"torch DataLoader sending uint8 images", stage.LoaderStats{Source: "torch", Workers: 2, Trip: &stage.BatchTrip{Batches: 10, BytesPerBatch: 6 << 20,
			Tensors: []stage.TripTensor{{Key: "['image']", DType: "uint8", Shape: []int{32, 128, 128, 3}, Bytes: 6 << 20}}}},
			[]string{"batch 6.0 MiB"}, []string{"float"}},
		{"torch DataLoader reading video", stage.LoaderStats{Source: "torch", Workers: 2, ReadAmp: 108.8, Video: []stage.VideoStream{
			{File: "/d/cam0.mp4", ReadAmp: 1, GOP: 1}, {File: "/d/cam1.mp4", ReadAmp: 108.8, GOP: 250}}},
			[]string{"video read amp 108.8× (GOP 250)"}, []string{"zarr", "cache hit", "counted"}},
		{"torch DataLoader reading cheap video frames, counted in a share of the time", stage.LoaderStats{Source: "torch", Workers: 2, ReadAmp: 1, CountedShare: 0.14,
			Video: []stage.VideoStream{{File: "/d/cam0.mp4", ReadAmp: 1, GOP: 1}}},
			[]string{"video read amp 1.0× (GOP 1) counted 14 %"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(styles.New(false))
			l := tc.stats
			m.SetSnapshot(&snapshot.Snapshot{Loader: &l})
			m.SetSize(200, 2)
			got := m.View()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("pane lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("pane shows %q:\n%s", w, got)
				}
			}
		})
	}
}
