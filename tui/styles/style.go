package styles

import (
	"strings"

	"charm.land/lipgloss/v2"
)

// Style is a lipgloss style whose Render of one line of text is two
// string concatenations. lipgloss.Style.Render works out borders, padding,
// alignment and every attribute on each call, and the panes call it a few
// hundred times a refresh for short spans of colour: it was most of
// pipetop's drawing time. The styles here are colours and attributes only,
// so one line of text always comes out as the same prefix, the text and the
// same suffix; text with line breaks or tabs, or several strings, goes
// through lipgloss.
type Style struct {
	lipgloss.Style
	pre, post string
	fast      bool // pre and post hold what lipgloss wraps one line in
}

// mark stands for the text when a style's prefix and suffix are taken.
const mark = "\x1f"

// Of returns s with its one-line prefix and suffix worked out; a style
// that sizes, pads or aligns its text (its output is not the same prefix
// and suffix around texts of other widths) always renders through
// lipgloss.
func Of(s lipgloss.Style) Style {
	out := s.Render(mark)
	i := strings.Index(out, mark)
	if i < 0 || strings.Count(out, mark) != 1 {
		return Style{Style: s}
	}
	pre, post := out[:i], out[i+len(mark):]
	for _, probe := range []string{"", "a", "abc de"} {
		if s.Render(probe) != pre+probe+post {
			return Style{Style: s}
		}
	}
	return Style{Style: s, pre: pre, post: post, fast: true}
}

// Render is lipgloss.Style.Render, without its per-call work for one line
// of text.
func (s Style) Render(strs ...string) string {
	if len(strs) == 1 && s.fast && !strings.ContainsAny(strs[0], "\n\t\r") {
		return s.pre + strs[0] + s.post
	}
	return s.Style.Render(strs...)
}
