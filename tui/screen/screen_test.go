package screen

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"github.com/pipetop/pipetop/tui/draw"
)

// helperEnv makes the test binary run helperModel full screen (TestMain).
const helperEnv = "PIPETOP_SCREEN_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		before, _ := term.GetState(os.Stdin.Fd())
		err := Run(context.Background(), &helperModel{}, Terminal{In: os.Stdin, Out: os.Stdout, Profile: colorprofile.ANSI256, Title: "helper"})
		after, _ := term.GetState(os.Stdin.Fd())
		fmt.Printf("after: %v, restored %v\n", err, reflect.DeepEqual(before, after))
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if os.Getenv(helperEnv) == "handoff" {
		handoff()
	}
	os.Exit(m.Run())
}

// handoff runs 8 screens one after another, each ended by its context
// after 400 ms, and prints the keys each one got: the helper of
// TestKeysSurviveTheHandoff.
func handoff() {
	var got []string
	for range 8 {
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		m := &helperModel{}
		_ = Run(ctx, m, Terminal{In: os.Stdin, Out: os.Stdout, Profile: colorprofile.ANSI256})
		cancel()
		got = append(got, m.typed)
	}
	fmt.Printf("handoff: %s.\n", strings.Join(got, "|"))
	time.Sleep(time.Minute)
	os.Exit(0)
}

// helperModel shows the keys typed so far, a click and the size.
type helperModel struct {
	typed string
	click string
	w, h  int
}

func (m *helperModel) Init() tea.Cmd { return nil }

func (m *helperModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case tea.MouseClickMsg:
		m.click = fmt.Sprintf("%d,%d", msg.X, msg.Y)
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q":
			return m, tea.Quit
		case "r":
			return m, Redraw
		}
		m.typed += msg.String()
	}
	return m, nil
}

func (m *helperModel) View() tea.View {
	return tea.NewView(fmt.Sprintf("\x1b[1msize %dx%d\x1b[0m\ntyped %q\nclick %s", m.w, m.h, m.typed, m.click))
}

// pane is a tmux session of its own, for one test.
type pane struct {
	t      *testing.T
	server string
}

func newPane(t *testing.T, w, h int, cmd ...string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (apt-get install tmux)")
	}
	p := &pane{t: t, server: fmt.Sprintf("screen-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.server, "kill-server").Run() })
	p.tmux(append([]string{"new-session", "-d", "-s", "s", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "env", "TERM=xterm-256color"}, cmd...)...)
	return p
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.server}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// await polls what until ok accepts it, for at most 10 s.
func (p *pane) await(what string, ok func(string) bool, get func() string) string {
	p.t.Helper()
	var s string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s = get(); ok(s) {
			return s
		}
	}
	p.t.Fatalf("timed out waiting for %s; got:\n%s", what, s)
	return ""
}

func (p *pane) text() string { return p.tmux("capture-pane", "-p", "-t", "s") }

func (p *pane) awaitText(what string, ok func(string) bool) string { return p.await(what, ok, p.text) }

// helperPane runs the test binary as the helper of mode (TestMain) in a
// w x h pane, once its first frame is there.
func helperPane(t *testing.T, mode string, w, h int) *pane {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newPane(t, w, h, helperEnv+"="+mode, exe)
	first := fmt.Sprintf("size %dx%d\n", w, h)
	p.awaitText("the first frame", func(s string) bool { return strings.HasPrefix(s, first) })
	return p
}

// TestRunOnATerminal runs a model full screen in tmux: keys, a click and
// a resize reach it, a redraw repaints, and q gives the terminal back as
// it was (main screen, cursor shown, cooked mode).
func TestRunOnATerminal(t *testing.T) {
	p := helperPane(t, "1", 60, 12)
	modes := "#{alternate_on} #{cursor_flag} #{mouse_button_flag} #{mouse_sgr_flag}"
	if got := p.tmux("display-message", "-p", "-t", "s", modes+" #{pane_title}"); got != "1 0 1 1 helper\n" {
		t.Errorf("alternate screen, cursor, mouse button and SGR modes, title = %q, want %q", got, "1 0 1 1 helper\n")
	}
	p.tmux("send-keys", "-t", "s", "a", "b", "Up")
	p.awaitText("the keys", func(s string) bool { return strings.Contains(s, `typed "abup"`) })
	p.tmux("send-keys", "-t", "s", "-l", "\x1b[<0;5;3M\x1b[<0;5;3m") // a left click at column 5, row 3 (SGR)
	p.awaitText("the click", func(s string) bool { return strings.Contains(s, "click 4,2") })
	p.tmux("resize-window", "-t", "s", "-x", "40", "-y", "8")
	p.awaitText("the new size", func(s string) bool { return strings.HasPrefix(s, "size 40x8\n") })
	p.tmux("send-keys", "-t", "s", "r")
	p.awaitText("the screen after a redraw", func(s string) bool { return strings.Contains(s, `typed "abup"`) })
	p.tmux("send-keys", "-t", "s", "q")
	p.awaitText("the main screen after q", func(s string) bool { return strings.Contains(s, "after: <nil>, restored true") })
	if got := p.tmux("display-message", "-p", "-t", "s", modes); got != "0 1 0 0\n" {
		t.Errorf("after q: alternate screen, cursor, mouse modes = %q, want %q", got, "0 1 0 0\n")
	}
}

// TestKeysSurviveTheHandoff types a key every 40 ms while screens follow
// one another (as a bisect's phases do): every key reaches a screen, in
// order (before pipetop read the keys itself, a key typed as a screen
// ended was lost at 7 of 9 handoffs).
func TestKeysSurviveTheHandoff(t *testing.T) {
	p := helperPane(t, "handoff", 200, 12)
	const keys = "abcdefghijklmnopstuvwxyz0123456789ABCDEFGHIJKLMNOPSTUVWXYZ" // no q or r: the helper's own keys
	sent := ""
	for i := 0; i < len(keys) && !strings.Contains(p.text(), "handoff:"); i++ {
		p.tmux("send-keys", "-t", "s", keys[i:i+1])
		sent += keys[i : i+1]
		time.Sleep(40 * time.Millisecond)
	}
	out := p.awaitText("the keys each screen got", func(s string) bool { return strings.Contains(s, "handoff:") })
	line := out[strings.Index(out, "handoff: ")+len("handoff: "):]
	line = line[:strings.Index(line, ".")]
	got := strings.ReplaceAll(line, "|", "")
	if len(got) < 20 || !strings.HasPrefix(sent, got) {
		t.Errorf("the screens got %q (one per screen: %s); sent %q: every key sent while they ran, in order, and at least 20", got, line, sent)
	}
	if n := strings.Count(line, "|"); n != 7 {
		t.Errorf("%d screens reported, want 8", n+1)
	}
}

// TestRunNeedsATerminal: without one, Run says so and draws nothing.
func TestRunNeedsATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	err = Run(context.Background(), &helperModel{}, Terminal{In: r, Out: w})
	if err == nil || !strings.Contains(err.Error(), "needs a terminal") {
		t.Fatalf("Run on a pipe: %v, want an error saying it needs a terminal", err)
	}
}

// counting counts the bytes written through it.
type counting struct {
	w io.Writer
	n int
}

func (c *counting) Write(b []byte) (int, error) {
	c.n += len(b)
	return c.w.Write(b)
}

// TestDrawWritesWhatChanged draws frames onto a real terminal (a tmux
// pane's tty): each is shown exactly, an unchanged frame writes nothing,
// a changed number writes a few bytes, and a shorter frame blanks the
// rows it no longer covers.
func TestDrawWritesWhatChanged(t *testing.T) {
	p := newPane(t, 50, 6, "sleep", "600")
	tty, err := os.OpenFile(strings.TrimSpace(p.tmux("display-message", "-p", "-t", "s", "#{pane_tty}")), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	out := &counting{w: tty}
	s := New(out, []string{"TERM=xterm-256color"}, colorprofile.ANSI256, 50, 6)
	if err := s.Open("t"); err != nil {
		t.Fatal(err)
	}
	frame := func(step int, rows int) string {
		lines := []string{fmt.Sprintf("\x1b[1mstep %d\x1b[0m  \x1b[38;5;2m■ data_wait\x1b[0m", step)}
		for i := 1; i < rows; i++ {
			lines = append(lines, fmt.Sprintf("row %d: %s", i, strings.Repeat("█", 10+i)))
		}
		return strings.Join(lines, "\n")
	}
	shown := func(f string) func(string) bool {
		want := strings.Split(ansi.Strip(f), "\n")
		return func(s string) bool {
			got := strings.Split(strings.TrimRight(s, "\n"), "\n")
			for i := range 6 {
				w, g := "", ""
				if i < len(want) {
					w = want[i]
				}
				if i < len(got) {
					g = strings.TrimRight(got[i], " ")
				}
				if g != w {
					return false
				}
			}
			return true
		}
	}
	draw := func(f string) int {
		t.Helper()
		before := out.n
		if err := s.Draw(f); err != nil {
			t.Fatal(err)
		}
		return out.n - before
	}
	first := draw(frame(1, 6))
	p.awaitText("the first frame", shown(frame(1, 6)))
	if n := draw(frame(1, 6)); n != 0 {
		t.Errorf("the same frame again wrote %d bytes, want 0", n)
	}
	if n := draw(frame(2, 6)); n == 0 || n > 20 {
		t.Errorf("one digit changed: %d bytes written, want 1-20 (the first frame took %d)", n, first)
	}
	p.awaitText("the digit changed", shown(frame(2, 6)))
	draw(frame(3, 3))
	p.awaitText("the rows the shorter frame left blank", shown(frame(3, 3)))
	s.Redraw()
	if n := draw(frame(3, 3)); n < len(ansi.Strip(frame(3, 3))) {
		t.Errorf("a redraw wrote %d bytes, less than the frame's text", n)
	}
	p.awaitText("the frame after a redraw", shown(frame(3, 3)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPlainLinesDrawAsUltraviolet: a line drawn by the plain path has the
// cells ultraviolet's decoder gives it, over a row that held other text;
// the golden screens' lines take the plain path, and lines it cannot take
// (wide, combining, emoji, links, other sequences) fall back.
func TestPlainLinesDrawAsUltraviolet(t *testing.T) {
	lines := []string{"", "abc", "\x1b[1;38;2;10;20;30mX\x1b[m y", "\x1b[38:2::1:2:3mz\x1b[0m", "\x1b[7m▶ ■ █▌ … ─│\x1b[27m end",
		strings.Repeat("\x1b[31mlong\x1b[m", 40), "日本 wide", "e\u0301 combining", "emoji ▶\ufe0f", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
		"\x1b[2Kerase", "tab\there", "\x1b[1mbold\x1b[22m\x1b[4;58;5;3munder\x1b[m"}
	files, _ := filepath.Glob("../testdata/golden/*.ansi")
	if len(files) == 0 {
		t.Fatal("no golden screens in ../testdata/golden")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	const w = 120
	fast := 0
	for _, line := range lines {
		if draw.Plain(line) {
			fast++
		}
		for _, p := range []colorprofile.Profile{colorprofile.TrueColor, colorprofile.ANSI256, colorprofile.Ascii} {
			got := New(io.Discard, nil, p, w, 1)
			want := uv.NewScreenBuffer(w, 1)
			uv.NewStyledString("\x1b[44m"+strings.Repeat("old", 50)).Draw(got.buf, uv.Rect(0, 0, w, 1))
			got.drawLine(line, 0, w)
			uv.NewStyledString(line).Draw(want, uv.Rect(0, 0, w, 1))
			for x := range w {
				g, e := got.buf.CellAt(x, 0), *want.CellAt(x, 0)
				e.Style, e.Link = uv.ConvertStyle(e.Style, p), uv.ConvertLink(e.Link, p)
				if !reflect.DeepEqual(*g, e) {
					t.Errorf("%v, line %q, cell %d: %+v, ultraviolet has %+v", p, line, x, *g, e)
					break
				}
			}
		}
	}
	if fast < len(lines)/2 {
		t.Errorf("%d of %d lines took the plain path", fast, len(lines))
	}
	for _, line := range lines[6:12] {
		if draw.Plain(line) {
			t.Errorf("%q took the plain path", line)
		}
	}
}

// goldenRefreshes is the golden 120x40 screen and the same screen with
// every digit moved on by one: the rows with numbers differ, as between
// two refreshes.
func goldenRefreshes(tb testing.TB) (frame, next string) {
	data, err := os.ReadFile("../testdata/golden/input_bound_h100_120x40.ansi")
	if err != nil {
		tb.Fatal(err)
	}
	next = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '0' + (r-'0'+1)%10
		}
		return r
	}, string(data))
	return string(data), next
}

// BenchmarkDraw is one refresh after another of goldenRefreshes' two
// screens: the rows that differ are parsed and compared.
func BenchmarkDraw(b *testing.B) {
	frame, next := goldenRefreshes(b)
	frames := []string{frame, next}
	s := New(io.Discard, nil, colorprofile.ANSI256, 120, 40) // TERM=xterm-256color
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Draw(frames[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDrawWritesWhatUltravioletWrites: frame after frame, in each colour
// profile, a Screen writes the bytes ultraviolet's renderer writes for the
// same frames left to convert the colours itself. Without colours (Ascii)
// the bytes differ: cells that only colour told apart are equal once
// converted, and the Screen does not write them again (its cells are
// tested against ultraviolet's, converted, in
// TestPlainLinesDrawAsUltraviolet).
func TestDrawWritesWhatUltravioletWrites(t *testing.T) {
	frame, next := goldenRefreshes(t)
	frames := []string{frame, next, "日本 wide\n\x1b]8;;http://x\x07link\x1b]8;;\x07\n\x1b[38;2;200;10;10mred", frame}
	for _, p := range []colorprofile.Profile{colorprofile.TrueColor, colorprofile.ANSI256, colorprofile.ANSI} {
		var got, want strings.Builder
		s := New(&got, nil, p, 120, 40)
		ref := uv.NewTerminalRenderer(&want, nil)
		ref.SetColorProfile(p)
		ref.SetScrollOptim(false)
		ref.Resize(120, 40)
		buf := uv.NewScreenBuffer(120, 40)
		for i, f := range frames {
			got.Reset()
			want.Reset()
			if err := s.Draw(f); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(f, "\n")
			for y := range 40 {
				line := ""
				if y < len(lines) {
					line = lines[y]
				}
				uv.NewStyledString(line).Draw(buf, uv.Rect(0, y, 120, 1))
			}
			ref.Render(buf.RenderBuffer)
			if err := ref.Flush(); err != nil {
				t.Fatal(err)
			}
			if g, w := got.String(), want.String(); g != w {
				at := 0
				for at < min(len(g), len(w)) && g[at] == w[at] {
					at++
				}
				t.Errorf("%v, frame %d: wrote %d bytes, ultraviolet %d; from byte %d: %q, ultraviolet %q", p, i, len(g), len(w), at, clip(g[max(0, at-40):]), clip(w[max(0, at-40):]))
			}
		}
	}
}

func clip(s string) string { return s[:min(len(s), 200)] }
