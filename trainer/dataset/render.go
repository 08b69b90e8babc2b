package dataset

import (
	"math"
	"math/rand/v2"
)

// NumShapes is the number of moving shapes; their (x, y) positions in
// [-1, 1] are the 14 values of the state and action vectors.
const NumShapes = 7

// StateDim is the width of data/state and data/action.
const StateDim = 2 * NumShapes

// episode holds the motion parameters of one episode: each coordinate
// follows a sum of two sinusoids, so the motion is smooth and predictable
// from the recent past.
type episode struct {
	amp, freq, phase [StateDim][2]float64
	center           [StateDim]float64
}

func newEpisode(r *rand.Rand) *episode {
	e := &episode{}
	for d := range StateDim {
		e.center[d] = 0.5 * (2*r.Float64() - 1)
		for k := range 2 {
			e.amp[d][k] = 0.1 + 0.2*r.Float64()
			e.freq[d][k] = (0.01 + 0.05*r.Float64()) * 2 * math.Pi
			e.phase[d][k] = 2 * math.Pi * r.Float64()
		}
	}
	return e
}

// state writes the 14 joint values at step t.
func (e *episode) state(t int, out []float32) {
	for d := range StateDim {
		v := e.center[d]
		for k := range 2 {
			v += e.amp[d][k] * math.Sin(e.freq[d][k]*float64(t)+e.phase[d][k])
		}
		out[d] = float32(math.Max(-1, math.Min(1, v)))
	}
}

// camera is one view of the scene: a 2x2 transform of the shape positions
// and its own colours, background and sensor-noise texture.
type camera struct {
	h, w     int
	m        [2][2]float64
	bg       [3]uint8
	colours  [NumShapes][3]uint8
	radius   [NumShapes]int
	square   [NumShapes]bool
	noise    []uint8 // texture larger than a frame; each frame takes a shifted window
	noiseLen int
}

func newCamera(k, h, w int, seed uint64) *camera {
	r := rand.New(rand.NewPCG(seed, uint64(k)+100))
	c := &camera{h: h, w: w}
	ang := float64(k) * math.Pi / 2
	flip := 1.0
	if k%2 == 1 {
		flip = -1
	}
	scale := 0.8 + 0.1*float64(k%3)
	c.m = [2][2]float64{{scale * math.Cos(ang), -scale * math.Sin(ang)}, {flip * scale * math.Sin(ang), flip * scale * math.Cos(ang)}}
	c.bg = [3]uint8{uint8(20 + 40*k), uint8(60 + 20*k), uint8(120 - 25*k)}
	for s := range NumShapes {
		c.colours[s] = [3]uint8{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256))}
		c.radius[s] = h/24 + r.IntN(h/24+1)
		c.square[s] = (s+k)%2 == 0
	}
	c.noiseLen = h*w*3 + 4096
	// Sensor-like texture: one random level per run of 4 pixels, the same
	// in all channels, so frames compress about as well as camera images
	// do with lz4 (2-3x) rather than like flat colour or white noise.
	c.noise = make([]uint8, c.noiseLen*2)
	for i := 0; i < len(c.noise); i += 12 {
		v := uint8(r.IntN(16))
		for k := i; k < min(i+12, len(c.noise)); k++ {
			c.noise[k] = v
		}
	}
	return c
}

// render draws the frame for a state into dst (H*W*3, HWC).
func (c *camera) render(t int, state []float32, dst []uint8) {
	n := c.h * c.w * 3
	off := 12 * ((t * 7919) % 341)
	nz := c.noise[off : off+n]
	for i := 0; i < n; i += 3 {
		dst[i] = c.bg[0] + nz[i]
		dst[i+1] = c.bg[1] + nz[i+1]
		dst[i+2] = c.bg[2] + nz[i+2]
	}
	for s := range NumShapes {
		x, y := float64(state[2*s]), float64(state[2*s+1])
		u := c.m[0][0]*x + c.m[0][1]*y
		v := c.m[1][0]*x + c.m[1][1]*y
		cx := int((u + 1) / 2 * float64(c.w-1))
		cy := int((v + 1) / 2 * float64(c.h-1))
		c.shape(s, cx, cy, dst)
	}
}

func (c *camera) shape(s, cx, cy int, dst []uint8) {
	r := c.radius[s]
	col := c.colours[s]
	for y := max(0, cy-r); y <= min(c.h-1, cy+r); y++ {
		for x := max(0, cx-r); x <= min(c.w-1, cx+r); x++ {
			dx, dy := x-cx, y-cy
			if !c.square[s] && dx*dx+dy*dy > r*r {
				continue
			}
			p := (y*c.w + x) * 3
			dst[p], dst[p+1], dst[p+2] = col[0], col[1], col[2]
		}
	}
}
