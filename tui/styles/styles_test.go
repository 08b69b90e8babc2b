package styles

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

func TestCanonicalColorsDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, name := range stage.Canonical {
		r, g, b, _ := StageColor(name).RGBA()
		key := string(rune(r)) + string(rune(g)) + string(rune(b))
		if other, dup := seen[key]; dup {
			t.Errorf("stages %s and %s share a colour", name, other)
		}
		seen[key] = name
	}
}

func TestCustomColorStable(t *testing.T) {
	a, b := StageColor("augment"), StageColor("augment")
	if a != b {
		t.Errorf("custom stage colour changed between calls: %v vs %v", a, b)
	}
}

func TestNoColorAddsNoEscapes(t *testing.T) {
	s := New(false)
	for name, got := range map[string]string{
		"title":   s.Title.Render("GPU"),
		"bad":     s.Bad.Render("disconnected"),
		"segment": s.Segment(stage.DataWait).Render("data_wait"),
		"idle":    s.Idle().Render("idle"),
	} {
		if strings.Contains(got, "\x1b") {
			t.Errorf("%s: plain style emitted an escape sequence: %q", name, got)
		}
	}
	if c := New(true).Segment(stage.Forward).Render("forward"); !strings.Contains(c, "\x1b[") {
		t.Errorf("colour style emitted no escape sequence: %q", c)
	}
}

func TestLightTheme(t *testing.T) {
	dark, light := NewTheme(true, Dark), NewTheme(true, Light)
	if dark.Value.Render("1") == light.Value.Render("1") || dark.Title.Render("GPU") == light.Title.Render("GPU") {
		t.Error("the light theme draws values and titles like the dark one")
	}
	if got := NewTheme(false, Light).Value.Render("1"); strings.Contains(got, "\x1b") {
		t.Errorf("light theme without colour emitted %q", got)
	}
}
