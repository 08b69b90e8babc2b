package torch

import (
	"math"
	"math/rand/v2"
)

var sin = math.Sin

// batchData is one host batch in the upload layouts.
type batchData struct {
	images        []uint8
	state, action []float32
}

// syntheticBatch makes a deterministic learnable batch: each sample's
// actions are a smooth function of its state, and its images carry the
// state as brightness, so observations predict actions.
func syntheticBatch(c Config, batch int, seed uint64) batchData {
	r := rand.New(rand.NewPCG(seed, 7))
	d := batchData{
		images: make([]uint8, batch*c.NObs*c.Cams*c.H*c.W*3),
		state:  make([]float32, batch*c.NObs*c.StateDim),
		action: make([]float32, batch*c.Horizon*c.ActionDim),
	}
	frame := c.Cams * c.H * c.W * 3
	for b := 0; b < batch; b++ {
		phase := r.Float32() * 6
		for o := 0; o < c.NObs; o++ {
			base := (b*c.NObs + o) * c.StateDim
			for k := 0; k < c.StateDim; k++ {
				d.state[base+k] = float32(k%3-1) * phase / 6
			}
			img := d.images[(b*c.NObs+o)*frame : (b*c.NObs+o+1)*frame]
			for i := range img {
				img[i] = uint8(int(phase*40) + r.IntN(16))
			}
		}
		for h := 0; h < c.Horizon; h++ {
			for k := 0; k < c.ActionDim; k++ {
				x := phase + float32(h)*0.2 + float32(k)*0.5
				d.action[(b*c.Horizon+h)*c.ActionDim+k] = float32(sin(float64(x)))
			}
		}
	}
	return d
}
