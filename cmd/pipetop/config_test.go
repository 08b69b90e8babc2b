package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFile: the settings file sets refresh, window, hidden panes,
// sort and theme; flags on the command line win.
func TestConfigFile(t *testing.T) {
	path := writeConfig(t, "refresh = \"500ms\"\nwindow = \"2m\"\nhidden = [\"history\"]\nsort = \"cpu\"\ntheme = \"light\"\n")
	c, err := parse([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Interval != 500*time.Millisecond || c.Window != 2 || !slices.Equal(c.Hidden, []string{"history"}) || c.Sort != "cpu" || c.Theme != "light" {
		t.Errorf("config = %+v", c)
	}
	c, err = parse([]string{"--config", path, "--interval", "2s", "--window", "5s"}, io.Discard)
	if err != nil || c.Interval != 2*time.Second || c.Window != 0 {
		t.Errorf("flags did not win: interval %v window %d (%v)", c.Interval, c.Window, err)
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Dir(filepath.Dir(path))) // no pipetop/config.toml there
	if c, err := parse(nil, io.Discard); err != nil || c.Theme != "" {
		t.Errorf("without a settings file: %+v, %v", c, err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"hidden = [\"clock\"]", `line 1: hidden pane "clock": want one of gpu, cpu, flame, ranks, stages, hotcode, processes, history, loader`},
		{"sort = \"colour\"", `sort "colour": want one of gpu, pid`},
		{"window = \"1h\"", `window "1h": want 5s, 30s, 2m or all`},
	}
	for _, tt := range tests {
		path := writeConfig(t, tt.text)
		_, err := parse([]string{"--config", path}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v, want %q naming the file", tt.text, err, tt.want)
		}
	}
	if _, err := parse([]string{"--config", "/nonexistent/pipetop.toml"}, io.Discard); err == nil {
		t.Error("a missing --config file is no error")
	}
	if _, err := parse([]string{"export", "--config", "x"}, io.Discard); err == nil {
		t.Error("--config accepted by export")
	}
}

// TestConfigHidesPanes: --once without the hidden panes.
func TestConfigHidesPanes(t *testing.T) {
	t.Setenv("PIPETOP_SOCKET_DIR", t.TempDir())
	path := writeConfig(t, "hidden = [\"processes\", \"cpu\"]\n")
	var out strings.Builder
	if err := run(context.Background(), []string{"--once", "--no-gpu", "--interval", "100ms", "--config", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "─ processes") || strings.Contains(s, "─ CPU") || !strings.Contains(s, "GPU") {
		t.Errorf("--once with processes and cpu hidden:\n%s", s)
	}
}
