// Command ansi2svg converts a terminal capture with ANSI colour escapes
// (tmux capture-pane -e -p) into an SVG image: one cell per character on
// a fixed grid, SGR colours (16, 256 and true colour), bold and reverse.
//
//	tmux capture-pane -e -p -t pane | ansi2svg -cols 120 -rows 40 > shot.svg
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	cols := flag.Int("cols", 0, "columns of the grid (default: the widest line)")
	rows := flag.Int("rows", 0, "rows of the grid (default: the number of lines)")
	title := flag.String("title", "pipetop", "SVG title")
	flag.Parse()
	lines, err := readLines(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ansi2svg: read capture:", err)
		os.Exit(1)
	}
	screen := parseScreen(lines)
	w := *cols
	for _, l := range screen {
		w = max(w, len(l))
	}
	h := max(*rows, len(screen))
	if err := writeSVG(os.Stdout, screen, w, h, *title); err != nil {
		fmt.Fprintln(os.Stderr, "ansi2svg: write svg:", err)
		os.Exit(1)
	}
}

func readLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

// cell is one character with its look.
type cell struct {
	r         string
	fg, bg    string // "" means the default colour
	bold, rev bool
	continued bool // the right half of a wide character
}

// attrs is the current SGR state.
type attrs struct {
	fg, bg    string
	bold, rev bool
}

func parseScreen(lines []string) [][]cell {
	screen := make([][]cell, len(lines))
	var a attrs
	for i, line := range lines {
		screen[i] = parseLine(line, &a)
	}
	return screen
}

func parseLine(s string, a *attrs) []cell {
	var out []cell
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j < len(s) && s[j] == 'm' {
				a.apply(s[i+2 : j])
			}
			i = j + 1
			continue
		}
		r, size := decodeRune(s[i:])
		i += size
		out = append(out, cell{r: r, fg: a.fg, bg: a.bg, bold: a.bold, rev: a.rev})
		if wide(r) {
			out = append(out, cell{continued: true, bg: a.bg, rev: a.rev})
		}
	}
	return out
}

func decodeRune(s string) (string, int) {
	for i := range s {
		if i > 0 {
			return s[:i], i
		}
	}
	return s, len(s)
}

// wide reports East Asian wide characters (two cells); pipetop draws none,
// but a capture may hold them.
func wide(r string) bool {
	for _, c := range r {
		return c >= 0x1100 && (c <= 0x115f || (c >= 0x2e80 && c <= 0xa4cf) || (c >= 0xac00 && c <= 0xd7a3) ||
			(c >= 0xf900 && c <= 0xfaff) || (c >= 0xff00 && c <= 0xff60) || (c >= 0x1f300 && c <= 0x1faff))
	}
	return false
}

// apply updates the state from the parameters of one SGR sequence.
func (a *attrs) apply(params string) {
	if params == "" {
		*a = attrs{}
		return
	}
	p := strings.Split(params, ";")
	for i := 0; i < len(p); i++ {
		n := atoi(p[i])
		switch {
		case n == 0:
			*a = attrs{}
		case n == 1:
			a.bold = true
		case n == 22:
			a.bold = false
		case n == 7:
			a.rev = true
		case n == 27:
			a.rev = false
		case n >= 30 && n <= 37:
			a.fg = palette(n - 30)
		case n >= 90 && n <= 97:
			a.fg = palette(n - 90 + 8)
		case n >= 40 && n <= 47:
			a.bg = palette(n - 40)
		case n >= 100 && n <= 107:
			a.bg = palette(n - 100 + 8)
		case n == 39:
			a.fg = ""
		case n == 49:
			a.bg = ""
		case (n == 38 || n == 48) && i+1 < len(p):
			var c string
			c, i = extended(p, i+1)
			if n == 38 {
				a.fg = c
			} else {
				a.bg = c
			}
		}
	}
}

// extended parses "5;N" or "2;R;G;B" starting at p[i]; it returns the
// colour and the index of the last parameter used.
func extended(p []string, i int) (string, int) {
	switch atoi(p[i]) {
	case 5:
		if i+1 < len(p) {
			return palette(atoi(p[i+1])), i + 1
		}
	case 2:
		if i+3 < len(p) {
			return fmt.Sprintf("#%02x%02x%02x", atoi(p[i+1])&255, atoi(p[i+2])&255, atoi(p[i+3])&255), i + 3
		}
	}
	return "", len(p)
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// base16 are the first 16 colours of the palette (a dark theme).
var base16 = []string{"#1e2127", "#e06c75", "#98c379", "#d19a66", "#61afef", "#c678dd", "#56b6c2", "#abb2bf",
	"#5c6370", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#ffffff"}

// palette maps an xterm 256-colour index to RGB.
func palette(n int) string {
	switch {
	case n < 0 || n > 255:
		return ""
	case n < 16:
		return base16[n]
	case n < 232:
		n -= 16
		level := func(v int) int {
			if v == 0 {
				return 0
			}
			return 55 + 40*v
		}
		return fmt.Sprintf("#%02x%02x%02x", level(n/36), level(n/6%6), level(n%6))
	}
	g := 8 + 10*(n-232)
	return fmt.Sprintf("#%02x%02x%02x", g, g, g)
}

const (
	cellW    = 8.4
	cellH    = 17.0
	fontSize = 14
	pad      = 12.0
	defFG    = "#abb2bf"
	defBG    = "#1e2127"
)

func writeSVG(w io.Writer, screen [][]cell, cols, rows int, title string) error {
	bw := bufio.NewWriter(w)
	width, height := 2*pad+float64(cols)*cellW, 2*pad+float64(rows)*cellH
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, "<title>%s</title>\n", escape(title))
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" rx="6" fill="%s"/>`+"\n", defBG)
	fmt.Fprintf(bw, `<g font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="%d" xml:space="preserve">`+"\n", fontSize)
	for y, line := range screen {
		writeLine(bw, line, y)
	}
	fmt.Fprintln(bw, "</g>\n</svg>")
	return bw.Flush()
}

// writeLine emits background rectangles and text runs of equal style.
func writeLine(w io.Writer, line []cell, y int) {
	top := pad + float64(y)*cellH
	for x := 0; x < len(line); {
		fg, bg := colors(line[x])
		end := x + 1
		for end < len(line) {
			f2, b2 := colors(line[end])
			if f2 != fg || b2 != bg || line[end].bold != line[x].bold {
				break
			}
			end++
		}
		left := pad + float64(x)*cellW
		if bg != defBG {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, top, float64(end-x)*cellW+0.5, cellH+0.5, bg)
		}
		var text strings.Builder
		for i, c := range line[x:end] {
			switch {
			case c.continued:
			case blockEighths(c.r) > 0:
				// Fonts leave gaps between rows of block glyphs; draw the
				// block as a rectangle so stacked rows join as in a terminal.
				h := cellH * float64(blockEighths(c.r)) / 8
				fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
					left+float64(i)*cellW, top+cellH-h, cellW+1, h+0.5, fg)
				text.WriteString(" ")
			default:
				text.WriteString(c.r)
			}
		}
		if t := strings.TrimRight(text.String(), " "); t != "" {
			n := len([]rune(t))
			weight := ""
			if line[x].bold {
				weight = ` font-weight="bold"`
			}
			fmt.Fprintf(w, `<text x="%.1f" y="%.1f" fill="%s"%s textLength="%.1f" lengthAdjust="spacingAndGlyphs">%s</text>`+"\n",
				left, top+cellH*0.78, fg, weight, float64(n)*cellW, escape(t))
		}
		x = end
	}
}

// blockEighths is the height in eighths of a lower block element
// (U+2581 to U+2588), or 0 for any other text.
func blockEighths(r string) int {
	if rs := []rune(r); len(rs) == 1 && rs[0] >= '\u2581' && rs[0] <= '\u2588' {
		return int(rs[0]-'\u2581') + 1
	}
	return 0
}

func colors(c cell) (fg, bg string) {
	fg, bg = c.fg, c.bg
	if fg == "" {
		fg = defFG
	}
	if bg == "" {
		bg = defBG
	}
	if c.rev {
		fg, bg = bg, fg
	}
	return fg, bg
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
