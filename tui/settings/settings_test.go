package settings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"

	"github.com/pipetop/pipetop/tui"
)

func TestParseAll(t *testing.T) {
	s, err := Parse([]byte(`# pipetop settings
refresh = "500ms"   # faster
window = '30s'
hidden = ["history", 'loader',]
sort = "cpu"
theme = "light"
prometheus = "http://prom:9090"

[keys]
quit = "ctrl+q"
pause = ["p", "space"]
process-kill = "f8"
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Refresh != 500*time.Millisecond || s.Window != "30s" || !slices.Equal(s.Hidden, []string{"history", "loader"}) ||
		s.Sort != "cpu" || s.Theme != "light" || s.Prometheus != "http://prom:9090" {
		t.Errorf("Parse = %+v", s)
	}
	for _, tc := range []struct {
		b    key.Binding
		keys []string
		help string
	}{
		{s.Keys.Root.Quit, []string{"ctrl+q"}, "ctrl+q"},
		{s.Keys.Root.Pause, []string{"p", "space"}, "p/space"},
		{s.Keys.Processes.Kill, []string{"f8"}, "f8"},
		{s.Keys.Root.Help, []string{"?"}, "?"}, // not rebound: the default
	} {
		if !slices.Equal(tc.b.Keys(), tc.keys) || tc.b.Help().Key != tc.help || tc.b.Help().Desc == "" {
			t.Errorf("binding %v (help %+v), want %v shown as %q", tc.b.Keys(), tc.b.Help(), tc.keys, tc.help)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"[ui]\ntheme = \"dark\"", `line 1: unknown key "ui"`},
		{"refresh = 5", "line 1: refresh: want a duration such as \"500ms\""},
		{"refresh = \"fast\"", `line 1: refresh "fast": want a duration`},
		{"refresh = \"-1s\"", `want a duration`},
		{"\n\ncolour = \"red\"", `line 3: unknown key "colour"`},
		{"theme = \"solarized\"", `theme "solarized": want one of dark, light`},
		{"hidden = [\"gpu\", \"clock\"]", `line 1: hidden pane "clock": want one of gpu, cpu`},
		{"hidden = \"gpu\"", "line 1: hidden: want an array of pane names"},
		{"theme = [\"dark\"]", "theme: want a string"},
		{"hidden = [\"gpu\"", "line 1: "},
		{"sort = \"cpu", "line 1: "},
		{"sort = \"colour\"", `line 1: sort "colour": want one of gpu, pid`},
		{"window = \"1h\"", `line 1: window "1h": want 5s, 30s, 2m or all`},
		{"sort = \"a\"\nsort = \"b\"", "line 2: "},
		{"\n[keys]\nquit = \"q\"\nleave = \"x\"", `line 4: keys.leave: no key action named "leave" (want one of quit, pause`},
		{"[keys]\nquit = \"ctl+q\"", `line 2: keys.quit: "ctl+q" is not a key`},
		{"[keys]\n\nquit = \"ctrl+c\"", `line 3: keys.quit: "ctrl+c" always stops pipetop`},
		{"[keys]\nquit = 7", `line 2: keys.quit: want a key ("ctrl+q") or an array of keys`},
		{"[keys]\nquit = []", `line 2: keys.quit: no key given`},
		{"[keys]\nquit = \"p\"", `line 2: keys.quit: "p" is also pause's key`},
		{"[keys]\npause = \"x\"\nquit = \"p\"\nstages = \"x\"", `line 4: keys.stages: "x" is also pause's key`},
		{"[keys.processes]\nsort = \">\"", `line 1: keys.processes: want a key`},
		{"keys = 3", "line 1: keys: want a table of key bindings"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.text))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v, want %q", tt.text, err, tt.want)
		}
	}
}

// Two actions may swap their keys: a key is refused only when two
// actions hold it once every binding is made.
func TestSwapKeys(t *testing.T) {
	s, err := Parse([]byte("[keys]\nquit = \"p\"\npause = \"q\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Keys.Root.Quit.Keys(), []string{"p"}) || !slices.Equal(s.Keys.Root.Pause.Keys(), []string{"q"}) {
		t.Errorf("quit %v, pause %v", s.Keys.Root.Quit.Keys(), s.Keys.Root.Pause.Keys())
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	if got := DefaultPath(); got != filepath.Join(dir, "pipetop", "config.toml") {
		t.Errorf("DefaultPath = %q", got)
	}
	if s, err := Load(""); err != nil || s.Theme != "" || s.Keys.Root.Quit.Help().Key != "q" {
		t.Errorf("no default file: %+v, %v", s, err)
	}
	if _, err := Load(filepath.Join(dir, "none.toml")); err == nil {
		t.Error("a missing --config file is no error")
	}
	if err := os.Mkdir(filepath.Join(dir, "pipetop"), 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root reads through mode 0
		if s, err := Load(""); err != nil || s.Theme != "" {
			t.Errorf("unreadable default file: %+v, %v", s, err)
		}
	}
	path := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(path, []byte("theme = \"neon\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+": line 1") {
		t.Errorf("error %v does not name the file and line", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("refresh = \"1s\"\nhidden = [\"gpu\", 'cpu']\n# c\n")
	f.Add("theme = \"li\\\"ght\"")
	f.Add("[x]")
	f.Add("[keys]\nquit = [\"q\", \"ctrl+q\"]\npause = \"q\"\n")
	f.Add("[keys]\n\"process-sort\" = \"f1\"\n[keys.x]\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse([]byte(text))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		if s.Refresh < 0 || (s.Theme != "" && !slices.Contains(Themes, s.Theme)) {
			t.Fatalf("accepted %+v", s)
		}
		for _, p := range s.Hidden {
			if !slices.Contains(tui.PaneNames(), p) {
				t.Fatalf("accepted hidden pane %q", p)
			}
		}
		if a, b, k, clash := s.Keys.Clash(); clash {
			t.Fatalf("accepted %q for both %s and %s", k, a, b)
		}
		for _, a := range s.Keys.Actions() {
			for _, k := range a.Binding.Keys() {
				if tui.CheckKey(k) != nil {
					t.Fatalf("accepted key %q for %s", k, a.Name)
				}
			}
		}
	})
}
