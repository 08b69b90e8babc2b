package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// panes stands for tui.PaneNames().
var panes = []string{"gpu", "cpu", "flame", "stages", "processes", "history", "loader"}

func TestParseAll(t *testing.T) {
	c, err := Parse(`# pipetop settings
refresh = "500ms"   # faster
window = '30s'
hidden = ["history", 'loader',]
sort = "cpu"
theme = "light"
`, panes)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Refresh: 500 * time.Millisecond, Window: "30s", Hidden: []string{"history", "loader"}, Sort: "cpu", Theme: "light"}
	if c.Refresh != want.Refresh || c.Window != want.Window || !slices.Equal(c.Hidden, want.Hidden) || c.Sort != want.Sort || c.Theme != want.Theme {
		t.Errorf("Parse = %+v, want %+v", c, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"[ui]\ntheme = \"dark\"", "line 1: tables ([section]) are not supported"},
		{"refresh = 5", "line 1: refresh: want a quoted string"},
		{"refresh = \"fast\"", `line 1: refresh "fast": want a duration`},
		{"refresh = \"-1s\"", `want a duration`},
		{"\n\ncolour = \"red\"", `line 3: unknown key "colour"`},
		{"theme = \"solarized\"", `theme "solarized": want one of dark, light`},
		{"hidden = [\"gpu\", \"clock\"]", `hidden pane "clock": want one of gpu, cpu`},
		{"hidden = \"gpu\"", "hidden: want an array of strings"},
		{"theme = [\"dark\"]", "theme: want a string"},
		{"hidden = [\"gpu\"", "want , or ]"},
		{"sort = \"cpu", `unterminated "string"`},
		{"sort = 'cpu", "unterminated 'string'"},
		{"sort = \"c\\pu\"", `unsupported escape \p`},
		{"sort = \"cpu\" extra", `unexpected "extra"`},
		{"sort", "want key = value"},
		{"so rt = \"x\"", `bad key "so rt"`},
		{"sort = \"a\"\nsort = \"b\"", "line 2: sort set twice"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.text, panes)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v, want %q", tt.text, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if c, err := Load(filepath.Join(dir, "none.toml"), true, panes); err != nil || c.Theme != "" {
		t.Errorf("missing optional file: %+v, %v", c, err)
	}
	if _, err := Load(filepath.Join(dir, "none.toml"), false, panes); err == nil {
		t.Error("a missing --config file is no error")
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root reads through mode 0
		if c, err := Load(filepath.Join(locked, "config.toml"), true, panes); err != nil || c.Theme != "" {
			t.Errorf("unreadable optional file: %+v, %v", c, err)
		}
	}
	path := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(path, []byte("theme = \"neon\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, true, panes); err == nil || !strings.Contains(err.Error(), path+": line 1") {
		t.Errorf("error %v does not name the file and line", err)
	}
	t.Setenv("XDG_CONFIG_HOME", dir)
	if got := DefaultPath(); got != filepath.Join(dir, "pipetop", "config.toml") {
		t.Errorf("DefaultPath = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("refresh = \"1s\"\nhidden = [\"gpu\", 'cpu']\n# c\n")
	f.Add("theme = \"li\\\"ght\"")
	f.Add("[x]")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse(text, panes)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		if c.Refresh < 0 || (c.Theme != "" && !slices.Contains(Themes, c.Theme)) {
			t.Fatalf("accepted %+v", c)
		}
		for _, p := range c.Hidden {
			if !slices.Contains(panes, p) {
				t.Fatalf("accepted hidden pane %q", p)
			}
		}
	})
}
