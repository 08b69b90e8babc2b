package verdict

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// rechunkArgs names the source and a destination beside it for the
// rechunk advice, or placeholders when the dataset is unknown.
func rechunkArgs(data string) string {
	data = strings.TrimSuffix(data, "/")
	if data == "" {
		return "SRC DST"
	}
	return data + " " + strings.TrimSuffix(data, ".zarr") + "-rechunked.zarr"
}

// amplified is the array that decodes the most bytes at HighReadAmp or
// more; nil when none does.
func amplified(l *stage.LoaderStats) *stage.ZarrArray {
	if l == nil {
		return nil
	}
	var best *stage.ZarrArray
	for i := range l.Zarr {
		a := &l.Zarr[i]
		if a.ReadAmp >= HighReadAmp && (best == nil || a.BytesDecoded > best.BytesDecoded) {
			best = a
		}
	}
	return best
}

// readCause is a source a loader reads — a Zarr array, a video stream,
// an HDF5 dataset — that decodes HighReadAmp or more times what it
// returns: what it is and why (Why), its read amplification, the time
// its reads took, and how to store or read it instead (Fix).
type readCause struct {
	Why    string
	Amp    float64
	ReadNs int64
	Fix    string
}

// readCauses finds, for each format a Python loader's reads are counted
// in, its most amplified source; each format adds its finder here.
var readCauses = []func(*stage.LoaderStats) (readCause, bool){zarrCause, hdf5Cause, videoCause}

// worstRead is the amplified source, of any format, whose reads took the
// most time; ok is false when none is amplified.
func worstRead(l *stage.LoaderStats) (worst readCause, ok bool) {
	if l == nil {
		return readCause{}, false
	}
	for _, find := range readCauses {
		if c, found := find(l); found && (!ok || c.ReadNs > worst.ReadNs) {
			worst, ok = c, true
		}
	}
	return worst, ok
}

// readAdvice is the advice for the loader's worst amplified source: its
// cause and its fix; ok is false when none is amplified.
func readAdvice(l *stage.LoaderStats) (advice string, ok bool) {
	c, ok := worstRead(l)
	if !ok {
		return "", false
	}
	return c.Why + ": " + c.Fix, true
}

// zarrCause is the loader's most amplified Zarr array as a read cause.
func zarrCause(l *stage.LoaderStats) (readCause, bool) {
	a := amplified(l)
	if a == nil {
		return readCause{}, false
	}
	return readCause{
		Why: fmt.Sprintf("the chunking of %s decodes %.0fx the bytes it returns (%s per read of a %s chunk)",
			a.Name(), a.ReadAmp, framesText(a.FramesPerCall()), shapeText(a.Chunks)),
		Amp: a.ReadAmp, ReadNs: a.ReadNs, Fix: rechunkHow(a)}, true
}

// rechunkHow says how to store a in chunks of one frame.
func rechunkHow(a *stage.ZarrArray) string {
	one := shapeText(append([]int{1}, a.Shape[min(1, len(a.Shape)):]...))
	switch {
	case len(a.Shape) < 3:
		return fmt.Sprintf("it is %s: read it whole into memory once (np.asarray(arr[:])) instead of per sample, or store it with chunks=%s",
			units.Bytes(float64(a.ItemSize)*float64(prod(a.Shape))), one)
	case a.Store == "" || a.Path == "":
		return fmt.Sprintf("store it in 1-frame chunks (chunks=%s) before adding workers", one)
	}
	cmd := fmt.Sprintf("`pipetrain data rechunk %s --chunk-frames 1`", rechunkArgs(a.Store))
	if a.ReplayBuffer {
		cmd = fmt.Sprintf("`pipetrain data inspect %s`, then %s", strings.TrimSuffix(a.Store, "/"), cmd)
	}
	return "rechunk it to 1-frame chunks before adding workers: " + cmd + " and point the Dataset at the copy"
}

func prod(v []int) int {
	p := 1
	for _, x := range v {
		p *= x
	}
	return p
}

// shapeText writes a shape as Python does: (2000, 16, 16, 1).
func shapeText(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	if len(s) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// framesText says how many frames a read returns.
func framesText(f float64) string {
	switch {
	case f <= 0:
		return "an unknown number of frames"
	case f < 1.05 && f > 0.95:
		return "1 frame"
	case f < 10:
		return fmt.Sprintf("%.1f frames", f)
	}
	return fmt.Sprintf("%.0f frames", f)
}
