package torch

import "testing"

func TestSmoke(t *testing.T) {
	lib := openLib(t)
	p := newPolicy(t, lib, Config{Preset: "tiny", Device: "cpu", Threads: 2, Seed: 1})
	t.Logf("info %+v", p.Info())
	c := p.Info().Config
	b := 4
	img := make([]uint8, b*c.NObs*c.Cams*c.H*c.W*3)
	st := make([]float32, b*c.NObs*c.StateDim)
	act := make([]float32, b*c.Horizon*c.ActionDim)
	for i := range img {
		img[i] = uint8(i * 7)
	}
	for i := range act {
		act[i] = float32(i%5) * 0.1
	}
	if err := p.Upload(img, st, act, b); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := p.Forward(); err != nil {
			t.Fatal(err)
		}
		if err := p.Backward(); err != nil {
			t.Fatal(err)
		}
		if err := p.OptimStep(); err != nil {
			t.Fatal(err)
		}
		l, g, err := p.SyncNorm()
		t.Log(l, g, err)
	}
}
