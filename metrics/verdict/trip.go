package verdict

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of the batch's trip from the DataLoader workers to the main
// process (docs/verdicts.md, "The batch's trip").
const (
	// Uint8SavedShare: float images that could be uint8 are named when
	// sending them as uint8 would cut at least this share of a batch's
	// bytes ...
	Uint8SavedShare = 0.25
	// Uint8SavedBytes ... and at least this many bytes a batch.
	Uint8SavedBytes = 256 << 10
	// ReceiveShare: the main process's time receiving batches from the
	// workers is named at or above this share of the time (planted on 2
	// shared cores: a batch of 256 tensors 89 to 98 %; its control, one
	// tensor, 15 to 21 %; float32 and uint8 camera images 10 to 15 % and
	// 11 to 18 %).
	ReceiveShare = 0.40
)

// receiveShare is the share of the time the main process spends
// receiving batches from the workers: the mean receive time of a batch
// times the batches it gets per second.
func receiveShare(l *stage.LoaderStats) float64 {
	if l.Trip == nil || l.Trip.ReceiveNs <= 0 {
		return 0
	}
	return float64(l.Trip.ReceiveNs) * l.BatchesPerSec / 1e9
}

// tripAdvice names what the batches' trip from the workers costs, when it
// is worth naming: float images the workers send where uint8 would do (the
// factor, the bytes a batch and the fix), and the main process's time
// receiving the batches when it is ReceiveShare of the time or more; ok is
// false when neither is.
func tripAdvice(l *stage.LoaderStats) (advice string, ok bool) {
	t := l.Trip
	if t == nil || t.Batches == 0 || l.Workers == 0 {
		return "", false
	}
	recv := ""
	if sh := receiveShare(l); sh >= ReceiveShare {
		recv = fmt.Sprintf("the main process spends %s receiving each batch from the workers (%s of the time)", units.Dur(float64(t.ReceiveNs)), units.Pct(sh))
	}
	if Uint8Factor(t) > 0 {
		advice = uint8Advice(t, t.Uint8())
		if recv != "" {
			advice += "; " + recv
		}
		return advice, true
	}
	if recv == "" {
		return "", false
	}
	return fmt.Sprintf("%s, %s a batch in %d tensors or arrays: send fewer, larger tensors (stack per-sample tensors in __getitem__ or collate_fn) and fewer bytes (crop, resize or keep uint8 in the workers)",
		recv, units.Bytes(float64(t.BytesPerBatch)), t.TensorsPerBatch), true
}

// uint8Worth says whether sending the uint8-able images as uint8 saves
// enough of a batch to be named.
func uint8Worth(t *stage.BatchTrip) bool {
	saved := t.Uint8Saved()
	return saved >= Uint8SavedBytes && float64(saved) >= Uint8SavedShare*float64(t.BytesPerBatch)
}

// uint8Advice names float images that could be uint8: the batch's bytes,
// the factor, what uint8 would save, the tensors and the conversion in
// the training step.
func uint8Advice(t *stage.BatchTrip, imgs []stage.TripTensor) string {
	top := imgs[0] // Tensors come most bytes first
	names := make([]string, 0, 4)
	for i, x := range imgs {
		if i == 3 && len(imgs) > 4 {
			names = append(names, fmt.Sprintf("%d more", len(imgs)-3))
			break
		}
		names = append(names, batchExpr(x.Key))
	}
	what := "images " + top.DType
	if len(imgs) > 1 {
		what = fmt.Sprintf("%d image tensors %s", len(imgs), top.DType)
	}
	conv := ".float()"
	if top.Uint8Scale == 255 {
		conv = ".float().div_(255)"
	}
	send := "send uint8"
	if top.Uint8Scale == 255 {
		send = "send uint8 (x.mul(255).round().byte())"
	}
	return fmt.Sprintf("workers send %s per batch to the main process (%s where uint8 would do: %dx the bytes, %s a batch more than uint8: %s); %s and convert in the training step instead (%s%s on the device)",
		units.Bytes(float64(t.BytesPerBatch)), what, top.Uint8Factor, units.Bytes(float64(t.Uint8Saved())), strings.Join(names, ", "),
		send, batchExpr(top.Key), conv)
}

// batchExpr is a tensor of the batch as the training step indexes it.
func batchExpr(key string) string { return "batch" + key }

// Uint8Factor is the factor by which the batch's float images that could
// be uint8 multiply their bytes (4 for float32), when sending them as uint8
// would save enough of a batch to be named; 0 otherwise.
func Uint8Factor(t *stage.BatchTrip) int {
	if t == nil {
		return 0
	}
	imgs := t.Uint8()
	if len(imgs) == 0 || !uint8Worth(t) {
		return 0
	}
	return imgs[0].Uint8Factor
}
