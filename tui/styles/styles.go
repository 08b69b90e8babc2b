// Package styles is the one place where pipetop's look is defined: the
// fixed stage colours of the flame bar, pane titles, bars and the verdict
// colours. A Styles built without colour renders plain text (NO_COLOR, a
// pipe, a dumb terminal); views then tell stages apart by their labels.
package styles

import (
	"hash/fnv"
	"image/color"
	"sync"

	"charm.land/lipgloss/v2"

	"github.com/pipetop/pipetop/metrics/stage"
)

// stageColors are the fixed colours of the known stages, from stage.Known.
var stageColors = func() map[string]color.Color {
	m := make(map[string]color.Color, len(stage.Known))
	for _, k := range stage.Known {
		m[k.Name] = lipgloss.Color(k.Color)
	}
	return m
}()

// customColors are handed to non-canonical stages by a hash of the name, so
// a stage keeps its colour across runs.
var customColors = []color.Color{
	lipgloss.Color("#98C379"), lipgloss.Color("#D19A66"), lipgloss.Color("#4FB3A9"),
	lipgloss.Color("#B5BD68"), lipgloss.Color("#8A9FE8"), lipgloss.Color("#D7875F"),
}

// IdleColor is the colour of GPU idle time in the flame bar.
var IdleColor = lipgloss.Color("#3B4048")

// StageColor returns the fixed colour of a stage name.
func StageColor(name string) color.Color {
	if c, ok := stageColors[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return customColors[h.Sum32()%uint32(len(customColors))]
}

// Styles holds every style the panes use.
type Styles struct {
	// Color is false when output must be plain text.
	Color bool

	Title     Style // pane titles
	Focused   Style // the focused pane's title
	Rule      Style // the line after a pane title
	Label     Style // "mem", "SM", field names
	Value     Style // numbers
	Dim       Style // sources, units, secondary text
	Good      Style // connected, low load
	GoodBold  Style // a healthy verdict
	Warn      Style // paused, medium load, warming up
	Bad       Style // disconnected, high load, bottlenecks
	BarEmpty  Style // the unfilled part of a bar (its background is the track)
	Sparkline Style // history sparklines
	Selected  Style // the picker's cursor row
	Key       Style // key names in help

	mu     sync.Mutex
	stages map[stageStyleKey]Style // Segment, Idle and Swatch, made once
}

// New returns the styles; color false gives plain styles that add no escape
// sequences at all.
func New(color bool) *Styles {
	if !color {
		s := &Styles{}
		p := Of(lipgloss.NewStyle())
		s.Title, s.Focused, s.Rule, s.Label, s.Value, s.Dim = p, p, p, p, p, p
		s.Good, s.GoodBold, s.Warn, s.Bad, s.BarEmpty, s.Sparkline, s.Key = p, p, p, p, p, p, p
		s.Selected = Of(lipgloss.NewStyle().Reverse(true))
		return s
	}
	return dark.styles()
}

// Theme names.
const (
	Dark  = "dark"  // light text for dark terminals (the default)
	Light = "light" // dark text for light terminals
)

// NewTheme returns the styles of the named theme ("" or Dark: New); color
// false gives plain styles whatever the theme.
func NewTheme(color bool, theme string) *Styles {
	if color && theme == Light {
		return light.styles()
	}
	return New(color)
}

// palette is a theme's colours; styles turns it into Styles.
type palette struct {
	title, focusText, focus, rule, label, value, dim string
	good, warn, bad, track, accent                   string
}

// The themes.
var (
	dark = palette{title: "#C8CCD4", focusText: "#1E2127", focus: "#61AFEF", rule: "#4B5263", label: "#ABB2BF",
		value: "#E6E6E6", dim: "#7F848E", good: "#98C379", warn: "#E5C07B", bad: "#E06C75", track: "#2C313A", accent: "#61AFEF"}
	light = palette{title: "#383A42", focusText: "#FAFAFA", focus: "#4078F2", rule: "#A0A1A7", label: "#50545E",
		value: "#202227", dim: "#696C77", good: "#3E8E3D", warn: "#A86F00", bad: "#D0372A", track: "#E4E4E7", accent: "#4078F2"}
)

// styles is the Styles of a colour palette.
func (p palette) styles() *Styles {
	fg := func(c string) lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color(c)) }
	bold := func(c string) lipgloss.Style { return fg(c).Bold(true) }
	return &Styles{
		Color:     true,
		Title:     Of(bold(p.title)),
		Focused:   Of(bold(p.focusText).Background(lipgloss.Color(p.focus))),
		Rule:      Of(fg(p.rule)),
		Label:     Of(fg(p.label)),
		Value:     Of(bold(p.value)),
		Dim:       Of(fg(p.dim)),
		Good:      Of(fg(p.good)),
		GoodBold:  Of(bold(p.good)),
		Warn:      Of(fg(p.warn)),
		Bad:       Of(bold(p.bad)),
		BarEmpty:  Of(lipgloss.NewStyle().Background(lipgloss.Color(p.track))),
		Sparkline: Of(fg(p.accent)),
		Selected:  Of(lipgloss.NewStyle().Reverse(true)),
		Key:       Of(bold(p.accent)),
	}
}

// Segment is the style of a flame bar segment of the named stage: text on
// the stage colour.
func (s *Styles) Segment(name string) Style {
	return s.cached(segmentKind, name, func() lipgloss.Style {
		return lipgloss.NewStyle().Foreground(lipgloss.Color("#1E2127")).Background(StageColor(name))
	})
}

// Idle is the style of the GPU idle segment.
func (s *Styles) Idle() Style {
	return s.cached(idleKind, "", func() lipgloss.Style {
		return lipgloss.NewStyle().Foreground(lipgloss.Color("#ABB2BF")).Background(IdleColor)
	})
}

// Swatch is the style of a legend square of the named stage.
func (s *Styles) Swatch(name string) Style {
	return s.cached(swatchKind, name, func() lipgloss.Style { return lipgloss.NewStyle().Foreground(StageColor(name)) })
}

// Kinds of the per-stage styles Styles keeps once made.
const (
	segmentKind = iota
	idleKind
	swatchKind
)

// cached returns the style of kind for stage name, made by make the first
// time (plain without colour).
func (s *Styles) cached(kind int, name string, make func() lipgloss.Style) Style {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := stageStyleKey{kind, name}
	if st, ok := s.stages[key]; ok {
		return st
	}
	st := Of(lipgloss.NewStyle())
	if s.Color {
		st = Of(make())
	}
	if s.stages == nil {
		s.stages = map[stageStyleKey]Style{}
	}
	s.stages[key] = st
	return st
}

// stageStyleKey names a per-stage style.
type stageStyleKey struct {
	kind int
	name string
}

// Load picks Good, Warn or Bad for a 0..100 load.
func (s *Styles) Load(pct float64) Style {
	switch {
	case pct >= 90:
		return s.Bad
	case pct >= 60:
		return s.Warn
	}
	return s.Good
}
