// Package styles is the one place where pipetop's look is defined: the
// fixed stage colours of the flame bar, pane titles, bars and the verdict
// colours. A Styles built without colour renders plain text (NO_COLOR, a
// pipe, a dumb terminal); views then tell stages apart by their labels.
package styles

import (
	"hash/fnv"
	"image/color"

	"charm.land/lipgloss/v2"

	"github.com/pipetop/pipetop/metrics/stage"
)

// Fixed colours of the known stages (stage.Known). data_wait is the warm colour that
// draws the eye: waiting for input is the most common bottleneck.
var stageColors = map[string]color.Color{
	stage.DataWait: lipgloss.Color("#E5734B"),
	stage.H2D:      lipgloss.Color("#E5C07B"),
	stage.Forward:  lipgloss.Color("#61AFEF"),
	stage.Backward: lipgloss.Color("#C678DD"),
	stage.Comm:     lipgloss.Color("#E8A33D"),
	stage.Optim:    lipgloss.Color("#56B6C2"),
	stage.Sync:     lipgloss.Color("#E06C9F"),
	stage.Other:    lipgloss.Color("#7F848E"),
	stage.Eval:     lipgloss.Color("#5FAF87"),
}

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

	Title     lipgloss.Style // pane titles
	Focused   lipgloss.Style // the focused pane's title
	Rule      lipgloss.Style // the line after a pane title
	Label     lipgloss.Style // "mem", "SM", field names
	Value     lipgloss.Style // numbers
	Dim       lipgloss.Style // sources, units, secondary text
	Good      lipgloss.Style // connected, low load
	Warn      lipgloss.Style // paused, medium load, warming up
	Bad       lipgloss.Style // disconnected, high load, bottlenecks
	BarEmpty  lipgloss.Style // the unfilled part of a bar (its background is the track)
	Sparkline lipgloss.Style // history sparklines
	Selected  lipgloss.Style // the picker's cursor row
	Key       lipgloss.Style // key names in help
}

// New returns the styles; color false gives plain styles that add no escape
// sequences at all.
func New(color bool) *Styles {
	s := &Styles{Color: color}
	plain := lipgloss.NewStyle()
	if !color {
		s.Title, s.Focused, s.Rule, s.Label, s.Value, s.Dim = plain, plain, plain, plain, plain, plain
		s.Good, s.Warn, s.Bad, s.BarEmpty, s.Sparkline, s.Key = plain, plain, plain, plain, plain, plain
		s.Selected = plain.Reverse(true)
		return s
	}
	s.Title = plain.Bold(true).Foreground(lipgloss.Color("#C8CCD4"))
	s.Focused = plain.Bold(true).Foreground(lipgloss.Color("#1E2127")).Background(lipgloss.Color("#61AFEF"))
	s.Rule = plain.Foreground(lipgloss.Color("#4B5263"))
	s.Label = plain.Foreground(lipgloss.Color("#ABB2BF"))
	s.Value = plain.Bold(true).Foreground(lipgloss.Color("#E6E6E6"))
	s.Dim = plain.Foreground(lipgloss.Color("#7F848E"))
	s.Good = plain.Foreground(lipgloss.Color("#98C379"))
	s.Warn = plain.Foreground(lipgloss.Color("#E5C07B"))
	s.Bad = plain.Bold(true).Foreground(lipgloss.Color("#E06C75"))
	s.BarEmpty = plain.Background(lipgloss.Color("#2C313A"))
	s.Sparkline = plain.Foreground(lipgloss.Color("#61AFEF"))
	s.Selected = plain.Reverse(true)
	s.Key = plain.Bold(true).Foreground(lipgloss.Color("#61AFEF"))
	return s
}

// Theme names.
const (
	Dark  = "dark"  // light text for dark terminals (the default)
	Light = "light" // dark text for light terminals
)

// NewTheme returns the styles of the named theme ("" or Dark: New); color
// false gives plain styles whatever the theme.
func NewTheme(color bool, theme string) *Styles {
	s := New(color)
	if !color || theme != Light {
		return s
	}
	plain := lipgloss.NewStyle()
	s.Title = plain.Bold(true).Foreground(lipgloss.Color("#383A42"))
	s.Focused = plain.Bold(true).Foreground(lipgloss.Color("#FAFAFA")).Background(lipgloss.Color("#4078F2"))
	s.Rule = plain.Foreground(lipgloss.Color("#A0A1A7"))
	s.Label = plain.Foreground(lipgloss.Color("#50545E"))
	s.Value = plain.Bold(true).Foreground(lipgloss.Color("#202227"))
	s.Dim = plain.Foreground(lipgloss.Color("#696C77"))
	s.Good = plain.Foreground(lipgloss.Color("#3E8E3D"))
	s.Warn = plain.Foreground(lipgloss.Color("#A86F00"))
	s.Bad = plain.Bold(true).Foreground(lipgloss.Color("#D0372A"))
	s.BarEmpty = plain.Background(lipgloss.Color("#E4E4E7"))
	s.Sparkline = plain.Foreground(lipgloss.Color("#4078F2"))
	s.Key = plain.Bold(true).Foreground(lipgloss.Color("#4078F2"))
	return s
}

// Segment is the style of a flame bar segment of the named stage: text on
// the stage colour.
func (s *Styles) Segment(name string) lipgloss.Style {
	if !s.Color {
		return lipgloss.NewStyle()
	}
	return lipgloss.NewStyle().Foreground(lipgloss.Color("#1E2127")).Background(StageColor(name))
}

// Idle is the style of the GPU idle segment.
func (s *Styles) Idle() lipgloss.Style {
	if !s.Color {
		return lipgloss.NewStyle()
	}
	return lipgloss.NewStyle().Foreground(lipgloss.Color("#ABB2BF")).Background(IdleColor)
}

// Swatch is the style of a legend square of the named stage.
func (s *Styles) Swatch(name string) lipgloss.Style {
	if !s.Color {
		return lipgloss.NewStyle()
	}
	return lipgloss.NewStyle().Foreground(StageColor(name))
}

// Load picks Good, Warn or Bad for a 0..100 load.
func (s *Styles) Load(pct float64) lipgloss.Style {
	switch {
	case pct >= 90:
		return s.Bad
	case pct >= 60:
		return s.Warn
	}
	return s.Good
}
