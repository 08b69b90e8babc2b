package draw

import (
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Width is the number of terminal cells s occupies (escape sequences
// excluded). Lines made of the characters pipetop draws with (ASCII,
// Latin-1, punctuation, arrows, box drawing, blocks and shapes: one cell
// each) are measured by a byte scan; anything else goes to the full
// grapheme-aware measure (ansi.StringWidth), which was most of the cost of
// drawing a screen.
func Width(s string) int {
	if n, ok := narrowWidth(s); ok {
		return n
	}
	return ansi.StringWidth(s)
}

// narrowWidth counts the cells of s when every printed rune is a
// one-cell rune of the ranges oneCell accepts and every escape sequence is
// a CSI (ESC [ ... final byte) sequence; ok is false otherwise.
func narrowWidth(s string) (n int, ok bool) { return scanNarrow(s, skipCSI) }

// Plain reports whether every escape sequence of s is an SGR sequence (ESC
// [, digits, ';' or ':', m) and every other rune a printable rune of the
// ranges oneCell accepts: text that a screen can put in cells one rune a
// cell, reading only the styles.
func Plain(s string) bool {
	_, ok := scanNarrow(s, skipSGR)
	return ok
}

// scanNarrow counts the cells of s when every printed rune is a one-cell
// rune and every escape sequence is one that skip accepts (it returns the
// index after the sequence starting at s[i]).
func scanNarrow(s string, skip func(s string, i int) (int, bool)) (n int, ok bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			j, ok := skip(s, i)
			if !ok {
				return 0, false
			}
			i = j
		case c >= 0x20 && c < 0x7f:
			n++
			i++
		case c < 0x80:
			return 0, false // other control characters
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !oneCell(r) {
				return 0, false
			}
			n++
			i += size
		}
	}
	return n, true
}

// skipCSI returns the index after the CSI sequence starting at s[i] (an
// ESC): ESC [, parameter bytes (0x30-0x3f), intermediate bytes
// (0x20-0x2f), a final byte (0x40-0x7e). ok is false for anything else,
// which the full measure then handles.
func skipCSI(s string, i int) (int, bool) {
	if i+1 >= len(s) || s[i+1] != '[' {
		return 0, false
	}
	j := i + 2
	for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
		j++
	}
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
		return j + 1, true
	}
	return 0, false
}

// skipSGR returns the index after the SGR sequence starting at s[i] (an
// ESC): ESC [, digits, ';' or ':', m; ok is false for anything else.
func skipSGR(s string, i int) (int, bool) {
	if i+1 >= len(s) || s[i+1] != '[' {
		return 0, false
	}
	j := i + 2
	for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
		j++
	}
	if j < len(s) && s[j] == 'm' {
		return j + 1, true
	}
	return 0, false
}

// oneCell reports whether r is in a range whose runes all take one cell
// and combine with nothing: Latin-1 without the soft hyphen, general
// punctuation up to the line separator, arrows, box drawing, block
// elements and geometric shapes but the two shown as emoji (U+25FD,
// U+25FE: two cells).
func oneCell(r rune) bool {
	switch {
	case r >= 0xa0 && r <= 0xff:
		return r != 0xad
	case r >= 0x2010 && r <= 0x2027:
		return true
	case r >= 0x2190 && r <= 0x21ff:
		return true
	case r >= 0x2500 && r <= 0x25ff:
		return r != 0x25fd && r != 0x25fe
	}
	return false
}
