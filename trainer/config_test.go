package trainer

import (
	"reflect"
	"testing"

	"github.com/pipetop/pipetop/trainer/episodes"
)

// TestLoaderConfigCameras checks --cameras replaces the camera keys only,
// and that without it the loader keeps its defaults.
func TestLoaderConfigCameras(t *testing.T) {
	c := TrainConfig{Data: "d", Cameras: []string{"camera0", "camera1"}}
	want := episodes.Keys{Cameras: []string{"camera0", "camera1"}, LowDim: episodes.DefaultKeys.LowDim, Action: episodes.DefaultKeys.Action}
	if got := c.loaderConfig(4, 0).Keys; !reflect.DeepEqual(got, want) {
		t.Errorf("keys %+v, want %+v", got, want)
	}
	if got := (TrainConfig{Data: "d"}).loaderConfig(4, 0).Keys; !reflect.DeepEqual(got, episodes.Keys{}) {
		t.Errorf("keys without --cameras %+v, want the loader's defaults (zero)", got)
	}
}
