// Package settings reads pipetop's settings file,
// ~/.config/pipetop/config.toml (or $XDG_CONFIG_HOME/pipetop/config.toml,
// or --config PATH):
//
//	refresh = "500ms"               # refresh interval
//	window  = "30s"                 # 5s, 30s, 2m or all
//	hidden  = ["history"]           # panes not to show
//	sort    = "cpu"                 # process table column
//	theme   = "light"               # dark (default) or light
//	prometheus = "http://prom:9090" # read runs from this Prometheus server
//
//	[keys]                          # rebind the screen's keys (tui.Keys)
//	quit  = "ctrl+q"                # one key,
//	pause = ["p", "space"]          # or several
//
// The file is TOML, read by github.com/pelletier/go-toml/v2 (maintained,
// strict about unknown keys, and its errors carry the line and key of
// every syntax and type mistake); its unstable parser gives the line of
// each key for the mistakes found after decoding (a pane or a key that
// does not exist). Every error names the file, the line and the key.
package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/components/proctable"
	"github.com/pipetop/pipetop/tui/styles"
)

// Settings are the file's settings; zero fields were not set, and Keys
// are the defaults with the file's bindings.
type Settings struct {
	Refresh time.Duration
	Window  string
	Hidden  []string
	Sort    string
	Theme   string
	// Prometheus is the server plain pipetop reads its run from (as
	// --prometheus does) instead of local sockets.
	Prometheus string
	Keys       tui.Keys
}

// Themes are the names theme may take.
var Themes = []string{styles.Dark, styles.Light}

// file is the file as TOML holds it, before its values are checked.
type file struct {
	Refresh    *string        `toml:"refresh"`
	Window     *string        `toml:"window"`
	Hidden     []string       `toml:"hidden"`
	Sort       *string        `toml:"sort"`
	Theme      *string        `toml:"theme"`
	Prometheus *string        `toml:"prometheus"`
	Keys       map[string]any `toml:"keys"`
}

// want says what each key's value must be, for a value of the wrong type.
var want = map[string]string{"refresh": "a duration such as \"500ms\"", "window": "a string: 5s, 30s, 2m or all",
	"hidden": "an array of pane names", "sort": "a column name", "theme": "a string: dark or light",
	"prometheus": "a URL string", "keys": "a table of key bindings: [keys] with quit = \"ctrl+q\""}

// DefaultPath is the settings file read without --config: under
// $XDG_CONFIG_HOME, else ~/.config; "" when neither is known.
func DefaultPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "pipetop", "config.toml")
}

// Load reads path; "" reads DefaultPath when there is one, and there a
// missing or unreadable file is no error and yields the defaults.
func Load(path string) (Settings, error) {
	optional := path == ""
	if optional {
		if path = DefaultPath(); path == "" {
			return Settings{Keys: tui.DefaultBindings()}, nil
		}
	}
	b, err := os.ReadFile(path)
	if optional && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
		// No settings, or a home that is not ours (sudo -u, setpriv).
		return Settings{Keys: tui.DefaultBindings()}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("config: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return s, fmt.Errorf("config %s: %w", path, err)
	}
	return s, nil
}

// Parse reads the settings from the file's bytes.
func Parse(b []byte) (Settings, error) {
	s := Settings{Keys: tui.DefaultBindings()}
	var f file
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return s, decodeError(err)
	}
	lines := keyLines(b)
	at := func(key string, err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("line %d: %w", lines[key], err)
	}
	for _, check := range []struct {
		key string
		err func() error
	}{
		{"refresh", func() error { return s.setRefresh(f.Refresh) }},
		{"window", func() error { return s.setWindow(f.Window) }},
		{"hidden", func() error { return s.setHidden(f.Hidden) }},
		{"sort", func() error { return s.setSort(f.Sort) }},
		{"theme", func() error { return s.setTheme(f.Theme) }},
	} {
		if err := at(check.key, check.err()); err != nil {
			return s, err
		}
	}
	if f.Prometheus != nil {
		s.Prometheus = *f.Prometheus
	}
	return s, s.bindKeys(f.Keys, lines)
}

// decodeError is the decoder's error with its line and key, and what the
// key wants when the value had another type.
func decodeError(err error) error {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return err
	}
	row, _ := de.Position()
	key := strings.Join(de.Key(), ".")
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	switch {
	case msg == "unknown field", msg == "missing table":
		msg = fmt.Sprintf("unknown key %q (known: refresh, window, hidden, sort, theme, prometheus, [keys])", key)
	case strings.HasPrefix(msg, "cannot decode") && want[key] != "":
		msg = fmt.Sprintf("%s: want %s", key, want[key])
	case key != "":
		msg = key + ": " + msg
	}
	return fmt.Errorf("line %d: %s", row, msg)
}

func (s *Settings) setRefresh(v *string) error {
	if v == nil {
		return nil
	}
	d, err := time.ParseDuration(*v)
	if err != nil || d <= 0 {
		return fmt.Errorf("refresh %q: want a duration such as 500ms or 2s", *v)
	}
	s.Refresh = d
	return nil
}

func (s *Settings) setWindow(v *string) error {
	if v == nil {
		return nil
	}
	if _, ok := monitor.WindowByLabel(*v); !ok {
		return fmt.Errorf("window %q: want 5s, 30s, 2m or all", *v)
	}
	s.Window = *v
	return nil
}

func (s *Settings) setHidden(panes []string) error {
	for _, p := range panes {
		if !slices.Contains(tui.PaneNames(), p) {
			return fmt.Errorf("hidden pane %q: want one of %s", p, strings.Join(tui.PaneNames(), ", "))
		}
	}
	s.Hidden = panes
	return nil
}

func (s *Settings) setSort(v *string) error {
	if v == nil {
		return nil
	}
	if _, ok := proctable.ColumnByName(*v); !ok {
		return fmt.Errorf("sort %q: want one of %s", *v, proctable.ColumnNames)
	}
	s.Sort = *v
	return nil
}

func (s *Settings) setTheme(v *string) error {
	if v == nil {
		return nil
	}
	if !slices.Contains(Themes, *v) {
		return fmt.Errorf("theme %q: want one of %s", *v, strings.Join(Themes, ", "))
	}
	s.Theme = *v
	return nil
}

// bindKeys rebinds the keys the [keys] table names (tui.Keys.Bind), in
// the file's order, then refuses a key that two actions share, naming the
// later of their lines.
func (s *Settings) bindKeys(keys map[string]any, lines map[string]int) error {
	names := make([]string, 0, len(keys))
	for name := range keys {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return lines["keys."+names[i]] < lines["keys."+names[j]] })
	for _, name := range names {
		line := lines["keys."+name]
		ks, err := keyList(keys[name])
		if err == nil {
			err = s.Keys.Bind(name, ks)
		}
		if err != nil {
			return fmt.Errorf("line %d: keys.%s: %w", line, name, err)
		}
	}
	if a, b, k, ok := s.Keys.Clash(); ok {
		if lines["keys."+a] > lines["keys."+b] {
			a, b = b, a
		}
		return fmt.Errorf("line %d: keys.%s: %q is also %s's key", lines["keys."+b], b, k, a)
	}
	return nil
}

// keyList is a binding's value: one key, or an array of them.
func keyList(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("want keys as strings, got %v", x)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a key (\"ctrl+q\") or an array of keys ([\"p\", \"space\"]), got %v", v)
}

// keyLines is the line of every key of the document (by its dotted path:
// "refresh", "keys.quit"), from go-toml's parser. The document has
// decoded already, so it parses.
func keyLines(b []byte) map[string]int {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(b)
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		var path []string
		line := 0
		for it := e.Key(); it.Next(); {
			n := it.Node()
			if line == 0 {
				line = lineOf(&p, n.Data)
			}
			path = append(path, string(n.Data))
		}
		key := strings.Join(path, ".")
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = key
		case unstable.KeyValue:
			if table != "" {
				key = table + "." + key
			}
			line = p.Shape(e.Raw).Start.Line
		}
		lines[key] = line
	}
	return lines
}

// lineOf is the line of b in the parser's input, 0 when b is not a part
// of it (a quoted key with escapes is a copy).
func lineOf(p *unstable.Parser, b []byte) int {
	data := p.Data()
	off := cap(data) - cap(b)
	if len(b) == 0 || off < 0 || off+len(b) > len(data) || &data[off] != &b[0] {
		return 0
	}
	return p.Shape(unstable.Range{Offset: uint32(off), Length: uint32(len(b))}).Start.Line
}
