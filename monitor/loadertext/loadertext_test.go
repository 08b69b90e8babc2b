package loadertext

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestCountedShare: HDF5 and video lines say when their reads were counted
// in a share of the time; Zarr's, always counted in full, do not.
func TestCountedShare(t *testing.T) {
	l := &stage.LoaderStats{CountedShare: 0.2,
		Zarr:  []stage.ZarrArray{{Path: "data/img", Chunks: []int{1, 96, 96, 3}}},
		HDF5:  []stage.HDF5Dataset{{File: "/d/f.h5", Path: "/img", Calls: 10}},
		Video: []stage.VideoStream{{File: "/d/cam0.mp4", Codec: "h264", Calls: 10}}}
	for _, s := range Sources(l) {
		counted := strings.Contains(s.Text, "(counted 20 % of the time, counts scaled)")
		if counted != (s.Kind != "zarr") {
			t.Errorf("%s line %q: counted note %v", s.Kind, s.Text, counted)
		}
	}
	l.CountedShare = 0
	for _, s := range Sources(l) {
		if strings.Contains(s.Text, "counted") {
			t.Errorf("counted in full, yet %q", s.Text)
		}
	}
}
