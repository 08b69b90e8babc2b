package gpumetric

import (
	"strings"
	"testing"
)

// TestTable: every reading has a key, the keys and series are unique, a
// served series is a pipetop_gpu_ one whose unit its name says, and
// ByProm finds each.
func TestTable(t *testing.T) {
	keys, proms := map[string]bool{}, map[string]bool{}
	for id, m := range Table {
		if m.Key == "" || keys[m.Key] {
			t.Errorf("reading %d: key %q missing or taken", id, m.Key)
		}
		keys[m.Key] = true
		if m.Prom == "" {
			continue
		}
		if proms[m.Prom] || !strings.HasPrefix(m.Prom, "pipetop_gpu_") || m.Help == "" {
			t.Errorf("%s: series %q taken, not pipetop_gpu_, or without help", m.Key, m.Prom)
		}
		proms[m.Prom] = true
		suffix := map[Unit]string{Percent: "_ratio", MHz: "_hertz"}[m.Unit]
		if suffix != "" && !strings.HasSuffix(m.Prom, suffix) {
			t.Errorf("%s: series %q does not end in %s", m.Key, m.Prom, suffix)
		}
		if got, ok := ByProm(m.Prom); !ok || got != ID(id) {
			t.Errorf("ByProm(%q) = %d, %v", m.Prom, got, ok)
		}
	}
	if _, ok := ByProm(""); ok {
		t.Error("ByProm finds the readings not served")
	}
}

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		u        Unit
		in, want float64
	}{{Percent, 63, 0.63}, {MHz, 1980, 1.98e9}, {Plain, 312, 312}} {
		if got := tc.u.Export(tc.in); got != tc.want {
			t.Errorf("%d.Export(%g) = %g, want %g", tc.u, tc.in, got, tc.want)
		}
		if back := tc.u.Import(tc.u.Export(tc.in)); back < tc.in*0.999999 || back > tc.in*1.000001 {
			t.Errorf("%d.Import(Export(%g)) = %g", tc.u, tc.in, back)
		}
	}
}
