package styles

import (
	"reflect"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"

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

// Style's one-line fast path writes exactly what lipgloss writes, for
// every style of every theme, with and without colour; text it cannot
// take goes through lipgloss.
func TestStyleRendersAsLipgloss(t *testing.T) {
	texts := []string{"", "x", "12.5 ms", " · ", "█▌", "日本", "\x1b[1mbold\x1b[m inside", "two\nlines", "a\ttab"}
	for _, st := range []*Styles{New(false), New(true), NewTheme(true, Light)} {
		v := reflect.ValueOf(st).Elem()
		all := map[string]Style{"Idle": st.Idle()}
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if s, ok := v.Field(i).Interface().(Style); ok {
				all[v.Type().Field(i).Name] = s
			}
		}
		for _, name := range append(stage.Canonical, "custom") {
			all["Segment "+name], all["Swatch "+name] = st.Segment(name), st.Swatch(name)
		}
		for name, s := range all {
			for _, text := range texts {
				if got, want := s.Render(text), s.Style.Render(text); got != want {
					t.Errorf("color=%v %s.Render(%q) = %q, lipgloss writes %q", st.Color, name, text, got, want)
				}
			}
		}
	}
	if s := Of(lipgloss.NewStyle().Width(9)); s.Render("x") != "x        " {
		t.Errorf("a style that pads: %q", s.Render("x"))
	}
}
