package summary

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestScriptTextVideo: the end-of-run text has a line per video stream,
// and the streams travel through a summary's JSON unchanged.
func TestScriptTextVideo(t *testing.T) {
	v := stage.VideoStream{File: "/d/cam0.mp4", Codec: "h264", Width: 96, Height: 96, GOP: 250, Opens: 300, Calls: 300, Seeks: 300,
		FramesDecoded: 32651, FramesReturned: 300, DecodeNs: 1.2e9, ConvertNs: 30e6, ReadNs: 400e6, ReadAmp: 108.837}
	s := Script{Name: "video_loop.py", Loader: &stage.LoaderStats{Source: "torch", Workers: 2, Video: []stage.VideoStream{v, {File: "/d/cam1.mp4", Stream: 1, Codec: "av1"}}}}
	var text strings.Builder
	WriteScriptText(&text, &s, "s.json")
	for _, want := range []string{
		"  video: /d/cam0.mp4 h264 96x96, a keyframe every 250 frames, 300 opens for 300 reads, 32651 frames decoded for 300 returned (read amplification 108.8x); decode 1.20 s, convert 30.0 ms, open/seek 400 ms\n",
		"  video: /d/cam1.mp4 stream 1 av1 0x0, keyframe interval unknown,"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	b, err := json.Marshal(s.Loader)
	if err != nil {
		t.Fatal(err)
	}
	var back stage.LoaderStats
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Video, s.Loader.Video) {
		t.Errorf("video streams read back %+v (%v), want %+v", back.Video, err, s.Loader.Video)
	}
}
