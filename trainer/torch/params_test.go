package torch

import "testing"

// resnet18Params counts ResNet18 parameters without the classifier, for
// base width w, from the architecture's definition.
func resnet18Params(w int64) int64 {
	bn := func(c int64) int64 { return 2 * c }
	block := func(in, out int64, down bool) int64 {
		n := in*out*9 + bn(out) + out*out*9 + bn(out)
		if down {
			n += in*out + bn(out)
		}
		return n
	}
	n := 3*w*49 + bn(w)
	for i, in := range []int64{w, w, 2 * w, 4 * w} {
		out := w << i
		n += block(in, out, in != out) + block(out, out, false)
	}
	return n
}

// policyParams counts the observation projection and DiT parameters.
func policyParams(c Config, freqDim int64) int64 {
	d, m := int64(c.DModel), int64(c.MLPRatio)
	lin := func(in, out int64) int64 { return in*out + out }
	obsIn := int64(c.NObs*c.Cams)*8*int64(c.EncoderWidth) + int64(c.NObs*c.StateDim)
	n := lin(obsIn, d) + lin(freqDim, d) + lin(d, d) + lin(int64(c.ActionDim), d) + int64(c.Horizon)*d
	block := lin(d, 3*d) + lin(d, d) + lin(d, m*d) + lin(m*d, d) + lin(d, 6*d)
	n += int64(c.Depth) * block
	return n + lin(d, 2*d) + lin(d, int64(c.ActionDim))
}

func TestParamCounts(t *testing.T) {
	if got := resnet18Params(64); got != 11_176_512 {
		t.Fatalf("formula check: ResNet18 without fc = %d, torchvision has 11,176,512", got)
	}
	lib := openLib(t)
	for _, preset := range []string{"tiny", "small"} {
		t.Run(preset, func(t *testing.T) {
			p := newPolicy(t, lib, Config{Preset: preset, Device: "cpu", Threads: 2})
			c := p.Info().Config
			enc, pol := p.ParamCounts()
			t.Logf("%s: encoder %d, policy %d (d_model %d, depth %d, encoder width %d)", preset, enc, pol, c.DModel, c.Depth, c.EncoderWidth)
			if want := resnet18Params(int64(c.EncoderWidth)); enc != want {
				t.Errorf("encoder params %d, want %d", enc, want)
			}
			if want := policyParams(c, 256); pol != want {
				t.Errorf("policy params %d, want %d", pol, want)
			}
		})
	}
}

// TestSeedPresetCounts creates the ~50M production policy once (no
// training) and logs its exact sizes.
func TestSeedPresetCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the seed preset allocates ~250 MB")
	}
	p := newPolicy(t, openLib(t), Config{Preset: "seed", Device: "cpu", Threads: 2})
	enc, pol := p.ParamCounts()
	c := p.Info().Config
	t.Logf("seed preset: encoder %d params (ResNet18, width %d, frozen), policy %d params (DiT d_model %d, depth %d, heads %d)",
		enc, c.EncoderWidth, pol, c.DModel, c.Depth, c.Heads)
	if enc != 11_176_512 {
		t.Errorf("encoder params %d, want the real ResNet18's 11,176,512", enc)
	}
	if pol < 45e6 || pol > 55e6 {
		t.Errorf("policy params %d, want about 50M", pol)
	}
	if want := policyParams(c, 256); pol != want {
		t.Errorf("policy params %d, formula says %d", pol, want)
	}
}
