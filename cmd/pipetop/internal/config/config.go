// Package config reads pipetop's settings file, ~/.config/pipetop/config.toml
// (or $XDG_CONFIG_HOME/pipetop/config.toml, or --config PATH):
//
//	refresh = "500ms"              # refresh interval
//	window  = "30s"                # 5s, 30s, 2m or all
//	hidden  = ["history"]          # panes not to show
//	sort    = "cpu"                # process table column
//	theme   = "light"              # dark (default) or light
//	prometheus = "http://prom:9090" # read runs from this Prometheus server
//
// It parses the small subset of TOML these keys need (key = "string",
// key = 'literal', key = ["array", "of", "strings"], # comments) rather
// than pulling in a TOML library for six keys; anything else (tables,
// numbers, multi-line values) is an error naming the line.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is the settings file's content; zero fields were not set.
type Config struct {
	Refresh time.Duration
	Window  string
	Hidden  []string
	Sort    string
	Theme   string
	// Prometheus is the server plain pipetop reads its run from
	// (as --prometheus does) instead of local sockets.
	Prometheus string
}

// Themes are the names theme may take.
var Themes = []string{"dark", "light"}

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

// Load reads path; hidden may list only panes. When optional (the
// default path), a missing or unreadable file is no error and yields the
// zero Config.
func Load(path string, optional bool, panes []string) (Config, error) {
	b, err := os.ReadFile(path)
	if optional && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
		// No settings, or a home that is not ours (sudo -u, setpriv).
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(string(b), panes)
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse reads the settings from text; hidden may list only panes.
func Parse(text string, panes []string) (Config, error) {
	var c Config
	seen := map[string]bool{}
	for n, line := range strings.Split(text, "\n") {
		key, val, ok, err := parseLine(line)
		if err != nil {
			return c, fmt.Errorf("line %d: %w", n+1, err)
		}
		if !ok {
			continue
		}
		if seen[key] {
			return c, fmt.Errorf("line %d: %s set twice", n+1, key)
		}
		seen[key] = true
		if err := c.set(key, val, panes); err != nil {
			return c, fmt.Errorf("line %d: %w", n+1, err)
		}
	}
	return c, nil
}

// value is a string or an array of strings.
type value struct {
	s     string
	list  []string
	array bool
}

func (c *Config) set(key string, v value, panes []string) error {
	want := func(array bool) error {
		if v.array != array {
			kind := map[bool]string{false: "a string", true: "an array of strings"}
			return fmt.Errorf("%s: want %s", key, kind[array])
		}
		return nil
	}
	var err error
	switch key {
	case "refresh":
		if err = want(false); err == nil {
			c.Refresh, err = time.ParseDuration(v.s)
			if err == nil && c.Refresh <= 0 {
				err = errors.New("not positive")
			}
			if err != nil {
				err = fmt.Errorf("refresh %q: want a duration such as 500ms or 2s", v.s)
			}
		}
	case "window":
		c.Window, err = v.s, want(false)
	case "sort":
		c.Sort, err = v.s, want(false)
	case "theme":
		if err = want(false); err == nil {
			c.Theme, err = v.s, oneOf("theme", v.s, Themes)
		}
	case "prometheus":
		c.Prometheus, err = v.s, want(false)
	case "hidden":
		if err = want(true); err == nil {
			c.Hidden = v.list
			for _, p := range v.list {
				if err = oneOf("hidden pane", p, panes); err != nil {
					break
				}
			}
		}
	default:
		err = fmt.Errorf("unknown key %q (known: refresh, window, hidden, sort, theme, prometheus)", key)
	}
	return err
}

func oneOf(what, v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s %q: want one of %s", what, v, strings.Join(allowed, ", "))
}

// parseLine splits one line into key and value; ok is false for a blank
// or comment line.
func parseLine(line string) (key string, v value, ok bool, err error) {
	rest := strings.TrimSpace(line)
	if rest == "" || rest[0] == '#' {
		return "", v, false, nil
	}
	if rest[0] == '[' {
		return "", v, false, errors.New("tables ([section]) are not supported: put the keys at the top level")
	}
	eq := strings.IndexByte(rest, '=')
	if eq < 0 {
		return "", v, false, fmt.Errorf("want key = value, got %q", rest)
	}
	key = strings.TrimSpace(rest[:eq])
	if !bareKey(key) {
		return "", v, false, fmt.Errorf("bad key %q", key)
	}
	rest = strings.TrimSpace(rest[eq+1:])
	if strings.HasPrefix(rest, "[") {
		v.array = true
		v.list, rest, err = parseArray(rest[1:])
	} else {
		v.s, rest, err = parseString(rest)
	}
	if err != nil {
		return "", v, false, fmt.Errorf("%s: %w", key, err)
	}
	if rest = strings.TrimSpace(rest); rest != "" && rest[0] != '#' {
		return "", v, false, fmt.Errorf("%s: unexpected %q after the value", key, rest)
	}
	return key, v, true, nil
}

func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// parseArray reads strings up to the closing bracket (on the same line).
func parseArray(s string) ([]string, string, error) {
	list := []string{}
	for {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "]") {
			return list, s[1:], nil
		}
		item, rest, err := parseString(s)
		if err != nil {
			return nil, "", err
		}
		list = append(list, item)
		rest = strings.TrimSpace(rest)
		switch {
		case strings.HasPrefix(rest, ","):
			s = rest[1:]
		case strings.HasPrefix(rest, "]"):
			return list, rest[1:], nil
		default:
			return nil, "", errors.New("array: want , or ] after an item (arrays must fit on one line)")
		}
	}
}

// parseString reads a "basic" string (escapes \" \\ \t \n) or a 'literal'
// one at the start of s and returns the rest.
func parseString(s string) (string, string, error) {
	if s == "" {
		return "", "", errors.New("missing value")
	}
	switch s[0] {
	case '\'':
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", "", errors.New("unterminated 'string'")
		}
		return s[1 : end+1], s[end+2:], nil
	case '"':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch c := s[i]; c {
			case '"':
				return b.String(), s[i+1:], nil
			case '\\':
				if i+1 == len(s) {
					return "", "", errors.New("unterminated \"string\"")
				}
				i++
				esc, ok := map[byte]byte{'"': '"', '\\': '\\', 't': '\t', 'n': '\n'}[s[i]]
				if !ok {
					return "", "", fmt.Errorf("unsupported escape \\%c", s[i])
				}
				b.WriteByte(esc)
			default:
				b.WriteByte(c)
			}
		}
		return "", "", errors.New("unterminated \"string\"")
	}
	return "", "", fmt.Errorf("want a quoted string, got %q (numbers and booleans are not settings here)", s)
}
