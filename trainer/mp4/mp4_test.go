package mp4

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// encode writes a test video with ffmpeg into dir and returns its path.
func encode(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is not installed (scripts/install-deps.sh installs it)")
	}
	out := filepath.Join(dir, name)
	full := append([]string{"-v", "error", "-f", "lavfi", "-i", "testsrc=size=32x24:rate=25"}, args...)
	full = append(full, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-sc_threshold", "0", out)
	if b, err := exec.Command("ffmpeg", full...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", full, err, b)
	}
	return out
}

func TestRealVideos(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name       string
		args       []string
		frames     int
		gop        int
		decodes    float64
		variable   bool
		rate       float64
		keyframes0 []int
	}{
		{"g1.mp4", []string{"-frames:v", "40", "-g", "1"}, 40, 1, 1, false, 25, nil},
		{"g10.mp4", []string{"-frames:v", "300", "-g", "10", "-keyint_min", "10"}, 300, 10, 5.5, false, 25, []int{0, 10, 20}},
		{"g250.mp4", []string{"-frames:v", "300", "-g", "250", "-keyint_min", "250"}, 300, 250, (250*251/2 + 50*51/2) / 300.0, false, 25, []int{0, 250}},
		{"vfr.mp4", []string{"-frames:v", "30", "-vf", `select='not(mod(n\,3))+lt(n\,5)'`, "-fps_mode", "vfr", "-g", "1"}, 30, 1, 1, true, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(encode(t, dir, c.name, c.args...))
			if err != nil {
				t.Fatal(err)
			}
			v := f.Video()
			if len(v) != 1 {
				t.Fatalf("%d video tracks, want 1", len(v))
			}
			tr := v[0]
			if tr.DataEnd <= 0 || f.Truncated(tr) {
				t.Errorf("data ends at %d of %d bytes: want inside the file", tr.DataEnd, f.Size)
			}
			if tr.Codec != "avc1" || tr.Width != 32 || tr.Height != 24 || tr.Samples != c.frames {
				t.Errorf("codec %s %dx%d %d frames, want avc1 32x24 %d", tr.Codec, tr.Width, tr.Height, tr.Samples, c.frames)
			}
			if tr.GOP() != c.gop || tr.DecodesPerFrame() != c.decodes {
				t.Errorf("GOP %d, decodes per frame %.3f; want %d, %.3f (keyframes %v)", tr.GOP(), tr.DecodesPerFrame(), c.gop, c.decodes, tr.Keyframes)
			}
			if tr.VariableRate() != c.variable {
				t.Errorf("variable rate %v, want %v (stts %v)", tr.VariableRate(), c.variable, tr.Deltas)
			}
			if c.rate > 0 && (tr.FrameRate() < c.rate*0.999 || tr.FrameRate() > c.rate*1.001) {
				t.Errorf("frame rate %.3f, want %.0f", tr.FrameRate(), c.rate)
			}
			for i, k := range c.keyframes0 {
				if i >= len(tr.Keyframes) || tr.Keyframes[i] != k {
					t.Errorf("keyframes start %v, want %v", tr.Keyframes[:min(3, len(tr.Keyframes))], c.keyframes0)
					break
				}
			}
		})
	}
}

// TestBadFiles checks that truncated and corrupt real files are errors
// naming the file, the box and the cause.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	src := encode(t, dir, "ok.mp4", "-frames:v", "20", "-g", "5")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	moov := bytes.Index(data, []byte("moov")) - 4
	stsz := bytes.Index(data, []byte("stsz")) - 4
	cases := []struct {
		name string
		data []byte
		want []string
	}{
		{"empty.mp4", nil, []string{"no moov box"}},
		{"text.mp4", []byte("this is not a video file at all"), []string{"runs past the end"}},
		{"cut-in-moov.mp4", data[:moov+200], []string{"moov", "truncated"}},
		{"cut-in-mdat.mp4", data[:moov-100], []string{"mdat", "truncated"}},
		{"bad-count.mp4", patch(data, stsz+16, 19), []string{"stbl", "stts times 20 samples but stsz sizes 19"}},
		{"huge-count.mp4", patch(data, stsz+16, 1<<30), []string{"stsz", "more than"}},
	}
	// The index whole (before the media data), the media data cut, mdat's
	// size fixed to match.
	fast, err := os.ReadFile(encode(t, dir, "fast.mp4", "-frames:v", "20", "-g", "5", "-movflags", "+faststart"))
	if err != nil {
		t.Fatal(err)
	}
	mdat := bytes.Index(fast, []byte("mdat")) - 4
	short := append([]byte(nil), fast[:mdat+(len(fast)-mdat)/2]...)
	binary.BigEndian.PutUint32(short[mdat:], uint32(len(short)-mdat))
	if f, err := Parse(bytes.NewReader(short), int64(len(short)), "short.mp4"); err != nil || !f.Truncated(f.Video()[0]) {
		t.Errorf("media cut short: %v, not seen as truncated", err)
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(p)
		var me *Error
		if !errors.As(err, &me) {
			t.Errorf("%s: error %v, want an *Error", c.name, err)
			continue
		}
		for _, w := range append([]string{p}, c.want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
}

// patch returns a copy of data with the big-endian uint32 at off set to v.
func patch(data []byte, off int, v uint32) []byte {
	out := append([]byte(nil), data...)
	binary.BigEndian.PutUint32(out[off:], v)
	return out
}

// mkbox builds a box of type typ around the concatenated parts.
func mkbox(typ string, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	out := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	return append(append(out, typ...), body...)
}

// u32s is a full box's version/flags word followed by vs, big-endian.
func u32s(vs ...uint32) []byte {
	out := []byte{0, 0, 0, 0}
	for _, v := range vs {
		out = binary.BigEndian.AppendUint32(out, v)
	}
	return out
}

// synthetic is a minimal video file: 12 frames of 1/25 s, keyframes 0 and 6.
func synthetic() []byte {
	entry := make([]byte, 78)
	binary.BigEndian.PutUint16(entry[24:], 64)
	binary.BigEndian.PutUint16(entry[26:], 48)
	stbl := mkbox("stbl",
		mkbox("stsd", u32s(1), mkbox("avc1", entry)),
		mkbox("stts", u32s(1, 12, 1)),
		mkbox("stss", u32s(2, 1, 7)),
		mkbox("stsz", u32s(100, 12)),
		mkbox("stsc", u32s(2, 1, 5, 1, 3, 2, 1)),
		mkbox("stco", u32s(3, 1000, 2000, 3000)))
	mdia := mkbox("mdia", mkbox("mdhd", u32s(0, 0, 25, 12)), mkbox("hdlr", u32s(0), []byte("vide"), make([]byte, 13)),
		mkbox("minf", stbl))
	return append(mkbox("ftyp", []byte("isom")), mkbox("moov", mkbox("trak", mdia))...)
}

func TestVariableRate(t *testing.T) {
	cases := []struct {
		deltas []TimeRun
		want   bool
	}{
		{[]TimeRun{{10, 512}}, false},
		{[]TimeRun{{2, 33}, {1, 34}, {2, 33}, {1, 34}}, false}, // 30 fps in milliseconds
		{[]TimeRun{{9, 40}, {1, 80}}, false},                   // only the last frame differs
		{[]TimeRun{{3, 40}, {1, 120}, {6, 40}}, true},
	}
	for _, c := range cases {
		tr := &Track{Timescale: 1000, Deltas: c.deltas}
		for _, r := range c.deltas {
			tr.Samples += int(r.Count)
		}
		if got := tr.VariableRate(); got != c.want {
			t.Errorf("stts %v: variable %v, want %v", c.deltas, got, c.want)
		}
	}
}

func TestSynthetic(t *testing.T) {
	f, err := Parse(bytes.NewReader(synthetic()), int64(len(synthetic())), "synthetic")
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Video()[0]
	// Chunk 1 holds samples 0-4, chunks 2 and 3 two each, of 100 bytes;
	// the 12 samples' last 3 are in no chunk.
	if tr.DataEnd != 3200 || !f.Truncated(tr) {
		t.Errorf("data end %d, want 3200, past the file", tr.DataEnd)
	}
	if tr.Width != 64 || tr.Height != 48 || tr.Samples != 12 || tr.GOP() != 6 || tr.DecodesPerFrame() != 3.5 || tr.FrameRate() != 25 {
		t.Errorf("parsed %+v (GOP %d, decodes %.2f, rate %.2f)", tr, tr.GOP(), tr.DecodesPerFrame(), tr.FrameRate())
	}
}

// TestCommitted parses testdata/g5.mp4 (ffmpeg, libx264, 10 frames of
// 16x16, keyframes every 5, index first), with no ffmpeg needed.
func TestCommitted(t *testing.T) {
	f, err := Open(filepath.Join("testdata", "g5.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Video()[0]
	if tr.Codec != "avc1" || tr.Width != 16 || tr.Samples != 10 || fmt.Sprint(tr.Keyframes) != "[0 5]" || tr.DecodesPerFrame() != 3 || f.Truncated(tr) || tr.FrameRate() != 25 {
		t.Errorf("parsed %s %dx%d %d frames keyframes %v decodes %.2f rate %.2f data end %d of %d", tr.Codec, tr.Width, tr.Height, tr.Samples, tr.Keyframes, tr.DecodesPerFrame(), tr.FrameRate(), tr.DataEnd, f.Size)
	}
}

// FuzzParse checks the parser never panics and that every failure is an
// *Error naming the file.
func FuzzParse(f *testing.F) {
	s := synthetic()
	f.Add(s)
	if real, err := os.ReadFile(filepath.Join("testdata", "g5.mp4")); err == nil {
		f.Add(real)
		f.Add(real[:len(real)/2])
	}
	f.Add(s[:len(s)-9])
	f.Add(mkbox("moov", mkbox("mvex")))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(bytes.NewReader(data), int64(len(data)), "fuzz.mp4")
		if err != nil {
			var me *Error
			if !errors.As(err, &me) || !strings.Contains(err.Error(), "fuzz.mp4") {
				t.Fatalf("error %v is not an *Error naming the file", err)
			}
			return
		}
		for _, tr := range file.Tracks {
			if d := tr.DecodesPerFrame(); d < 0 || (tr.Samples > 0 && d < 1) || d > float64(tr.Samples) {
				t.Fatalf("decodes per frame %v for %d samples", d, tr.Samples)
			}
			_ = tr.GOP()
			_ = tr.FrameRate()
			_ = tr.VariableRate()
		}
	})
}
