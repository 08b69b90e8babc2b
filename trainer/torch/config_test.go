package torch

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestConfigJSON(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want map[string]any
	}{
		{"zero values are left to the preset", Config{Preset: "tiny"}, map[string]any{"preset": "tiny"}},
		{"explicit values", Config{Preset: "seed", H: 96, LR: 3e-4, Seed: 9},
			map[string]any{"preset": "seed", "height": 96.0, "lr": 3e-4, "seed": 9.0}},
		{"negative switches off", Config{WeightDecay: -1, GradClip: -1},
			map[string]any{"weight_decay": 0.0, "grad_clip": 0.0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := configJSON(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("configJSON = %s, want %v", b, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("configJSON %s: %s = %v, want %v", b, k, got[k], v)
				}
			}
		})
	}
}

func TestResolveConfig(t *testing.T) {
	lib := openLib(t)
	got, err := lib.ResolveConfig(Config{Preset: "seed", H: 96})
	if err != nil {
		t.Fatal(err)
	}
	if got.H != 96 || got.W != 128 || got.DModel != 512 || got.Depth != 10 || got.Cams != 4 || got.Device != "auto" {
		t.Fatalf("resolved seed config %+v: want height 96 kept and the preset's other defaults", got)
	}
	cases := []struct{ json, want string }{
		{`{"preset":"tiny","bogus":1}`, `unknown key "bogus"`},
		{`{"cams":-1}`, `"cams"`},
		{`{"cams":1.5}`, `"cams"`},
		{`{"lr":"fast"}`, `"lr"`},
		{`{"preset":"tiny",}`, "byte"},
		{`{"preset":"tiny"} x`, "trailing"},
		{`{"preset":"tiny","preset":"seed"}`, "duplicate"},
		{`[1]`, "expected '{'"},
	}
	for _, c := range cases {
		if _, err := lib.resolveJSON(c.json); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resolve %s: %v, want an error mentioning %s", c.json, err, c.want)
		}
	}
}

// FuzzConfigJSON feeds arbitrary text to the C++ config parser: it must
// fail cleanly or produce a config that resolves to itself.
func FuzzConfigJSON(f *testing.F) {
	lib := openLib(f)
	for _, s := range []string{`{}`, `{"preset":"tiny","cams":3,"lr":0.001}`, `{"encoder_weights":"a\u00e9\n\"b"}`,
		`{"seed":-5,"device":"cuda:1","precision":"bf16"}`, `{"height":1e2}`, `{"x":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, js string) {
		if strings.IndexByte(js, 0) >= 0 {
			return // C strings end at NUL
		}
		out, err := lib.resolveJSON(js)
		if err != nil {
			return
		}
		again, err := lib.resolveJSON(out)
		if err != nil {
			t.Fatalf("resolved config %s does not parse: %v", out, err)
		}
		if again != out {
			t.Fatalf("resolving is not idempotent:\n%s\n%s", out, again)
		}
	})
}
