// Package draw holds the drawing primitives of pipetop's panes: horizontal
// bars with eighth-cell precision, sparklines, pane title rules, and fitting
// styled text into an exact width and height. Every function is safe for
// any size, zero and negative included.
package draw

import (
	"math"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pipetop/pipetop/tui/styles"
)

// eighths are the left-aligned partial blocks, 1/8 to 7/8 of a cell.
var eighths = []rune{'▏', '▎', '▍', '▌', '▋', '▊', '▉'}

// Bar draws a w-cell bar filled to frac (0..1) in fill, the rest as a
// track in empty: blanks on empty's background colour, or ░ when it has
// none (plain text).
func Bar(w int, frac float64, fill, empty styles.Style) string {
	if w <= 0 {
		return ""
	}
	if math.IsNaN(frac) || frac < 0 {
		frac = 0
	}
	frac = min(frac, 1)
	units := int(math.Round(frac * float64(w) * 8))
	full, part := units/8, units%8
	out, cells := "", full
	if full > 0 {
		out = fill.Render(strings.Repeat("█", full))
	}
	_, noBackground := empty.GetBackground().(lipgloss.NoColor)
	if part > 0 && cells < w {
		cell := fill.Style
		if !noBackground { // the partial cell's rest shows the track
			cell = cell.Background(empty.GetBackground())
		}
		out += cell.Render(string(eighths[part-1]))
		cells++
	}
	if cells < w {
		out += empty.Render(strings.Repeat(trackCell(noBackground), w-cells))
	}
	return out
}

// trackCell is what a bar's unfilled cells show: ░ when the empty style
// has no background colour (plain text), blanks on that background when
// it has one. A blank costs a third of the bytes of a ░ every time the
// terminal redraws the track.
func trackCell(noBackground bool) string {
	if noBackground {
		return "░"
	}
	return " "
}

// sparks are the eight heights of a sparkline cell.
var sparks = []rune{'▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'}

// Spark draws the last w values as a sparkline scaled to top (values at or
// above top draw a full cell); NaN draws a blank. Fewer values than w are
// right-aligned.
func Spark(values []float64, w int, top float64) string {
	if w <= 0 {
		return ""
	}
	if len(values) > w {
		values = values[len(values)-w:]
	}
	var b strings.Builder
	b.Grow(w * 3)
	b.WriteString(strings.Repeat(" ", w-len(values)))
	for _, v := range values {
		if math.IsNaN(v) || top <= 0 {
			b.WriteByte(' ')
			continue
		}
		i := int(math.Round(v / top * float64(len(sparks)-1)))
		b.WriteRune(sparks[max(0, min(i, len(sparks)-1))])
	}
	return b.String()
}

// Fit cuts or pads one line to exactly w cells.
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := Width(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = Width(s)
	}
	if n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// Block fits s into exactly h lines of exactly w cells: long lines are cut,
// missing lines are blank, extra lines are dropped.
func Block(s string, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = Fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", w)
		}
	}
	return strings.Join(out, "\n")
}

// Lines splits s into lines; an empty s has none.
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Rule draws a pane title as "── title ───…" across w cells; the title is
// rendered with title, the line with rule.
func Rule(title string, w int, titleStyle, rule styles.Style) string {
	if w <= 0 {
		return ""
	}
	head := "─ "
	t := titleStyle.Render(title)
	used := Width(head) + Width(t) + 1
	if used >= w {
		return Fit(rule.Render(head)+t, w)
	}
	return rule.Render(head) + t + " " + rule.Render(strings.Repeat("─", w-used))
}

// SideBySide joins two blocks of the same height with a one-cell gap; a and
// b must already be fitted to widths wa and wb.
func SideBySide(a, b string, wa, wb, h int) string {
	la := strings.Split(Block(a, wa, h), "\n")
	lb := strings.Split(Block(b, wb, h), "\n")
	out := make([]string, h)
	for i := range out {
		out[i] = la[i] + " " + lb[i]
	}
	return strings.Join(out, "\n")
}

// Wrap breaks plain words into lines of at most w cells.
func Wrap(text string, w int) []string {
	if w <= 0 {
		return nil
	}
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(text) {
		ww := Width(word)
		switch {
		case cur.Len() == 0:
		case Width(cur.String())+1+ww <= w:
			cur.WriteByte(' ')
		default:
			lines = append(lines, cur.String())
			cur.Reset()
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// Flow lays styled items out left to right, separated by sep, starting a
// new line when the next item would pass w cells.
func Flow(items []string, sep string, w int) []string {
	var lines []string
	cur := ""
	sw := Width(sep)
	for _, it := range items {
		switch {
		case cur == "":
			cur = it
		case Width(cur)+sw+Width(it) <= w:
			cur += sep + it
		default:
			lines = append(lines, cur)
			cur = it
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// Split divides w cells among values in proportion to their share of
// total, by largest remainder, so that the cells add up to w when the
// values add up to total (fewer when they add up to less). Values adding up
// to more than total share the w cells by their own sum: a publisher's
// stage times past its step's wall time never draw past the bar. Negative
// values get no cells.
func Split(values []float64, total float64, w int) []int {
	cells := make([]int, len(values))
	if w <= 0 || !(total > 0) {
		return cells
	}
	var sum float64
	for _, v := range values {
		sum += positive(v)
	}
	total = max(total, sum)
	rems := make([]float64, len(values))
	used := 0
	for i, v := range values {
		exact := positive(v) / total * float64(w)
		cells[i] = int(math.Floor(exact))
		used += cells[i]
		rems[i] = exact - float64(cells[i])
	}
	for used < w {
		best := -1
		for j, r := range rems {
			if r > 0 && (best < 0 || r > rems[best]) {
				best = j
			}
		}
		if best < 0 {
			break
		}
		cells[best]++
		rems[best] = 0
		used++
	}
	return cells
}

// positive is v when it is a positive finite number, else 0 (NaN too).
func positive(v float64) float64 {
	if v > 0 && !math.IsInf(v, 1) {
		return v
	}
	return 0
}
