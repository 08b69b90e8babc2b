package draw

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Every rune the fast path accepts measures as the full measure does.
func TestWidthOfEveryOneCellRune(t *testing.T) {
	for r := rune(0); r <= 0x2fff; r++ {
		s := string(r)
		if _, ok := narrowWidth(s); !ok {
			continue
		}
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Errorf("U+%04X %q: width %d, ansi.StringWidth %d", r, s, got, want)
		}
	}
}

func TestWidthOfStyledLines(t *testing.T) {
	for _, s := range []string{
		"", "plain ascii", "\x1b[38;2;1;2;3mred\x1b[0m text", "CPU ████▌░░░ 45 %", "─ GPU · 2 devices ─",
		"■ data_wait 200 ms 69 %", "▶ input-bound: 1.50 s µs", "\x1b[1m\x1b[4mx\x1b[m", "tab\there",
		"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "日本語", "e\u0301", "✗ cannot attach", "🙂 wide", "\x1b[", "\x1b",
	} {
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Errorf("%q: width %d, ansi.StringWidth %d", s, got, want)
		}
	}
}

func FuzzWidth(f *testing.F) {
	for _, s := range []string{"a\x1b[31mb", "█▌", "x\x1b[1;2", "·µ…", "\x1b[?25l", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Fatalf("%q: width %d, ansi.StringWidth %d", s, got, want)
		}
	})
}

func BenchmarkWidth(b *testing.B) {
	line := "\x1b[38;2;200;100;50m■\x1b[0m data_wait 200 ms 69 %  ████████▌░░░░ ─────"
	for _, c := range []struct {
		name string
		f    func(string) int
	}{{"fast", Width}, {"ansi", ansi.StringWidth}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				c.f(line)
			}
		})
	}
}

func TestPlain(t *testing.T) {
	for s, want := range map[string]bool{
		"":                          true,
		"ab █▌ … ─│ ■":              true,
		"\x1b[1;38;2;1;2;3mx\x1b[m": true,
		"\x1b[38:2::1:2:3mx":        true,
		"\x1b[2Kx":                  false, // CSI, not SGR
		"\x1b[?1mx":                 false, // private marker
		"\x1b]8;;u\x07x":            false, // OSC
		"日本":                        false, // two cells each
		"e\u0301":                   false, // combining
		"a\tb":                      false,
		"\x1b[1":                    false, // cut short
	} {
		if got := Plain(s); got != want {
			t.Errorf("Plain(%q) = %v, want %v", s, got, want)
		}
	}
}
