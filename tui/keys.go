package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"

	"github.com/pipetop/pipetop/tui/components/hotcode"
	"github.com/pipetop/pipetop/tui/components/proctable"
	"github.com/pipetop/pipetop/tui/components/ranks"
)

// KeyMap is the root's keys; panes with keys of their own (the process
// table's sort, filter and signal) hold them (keyed), and the help overlay
// is generated from both.
type KeyMap struct {
	Quit      key.Binding
	Pause     key.Binding
	Focus     key.Binding
	FocusBack key.Binding
	Window    key.Binding
	Stages    key.Binding
	Picker    key.Binding
	Faster    key.Binding
	Slower    key.Binding
	Redraw    key.Binding
	Up        key.Binding
	Down      key.Binding
	Help      key.Binding
}

// DefaultKeys are pipetop's root keys.
var DefaultKeys = KeyMap{
	Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
	Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
	Focus:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "focus next pane")),
	FocusBack: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "focus previous pane")),
	Window:    key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "window 5s/30s/2m/all")),
	Stages:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stage table (p50/p99)")),
	Picker:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "pick trainer")),
	Faster:    key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "refresh faster")),
	Slower:    key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "refresh slower")),
	Redraw:    key.NewBinding(key.WithKeys("ctrl+l"), key.WithHelp("ctrl+l", "redraw")),
	Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "scroll focused pane")),
	Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "scroll focused pane")),
	Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
}

// ShortHelp is the footer line.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Quit, k.Pause, k.Window, k.Stages, k.Picker, k.Focus, k.Faster, k.Slower}
}

// FullHelp is the help overlay, in columns.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Quit, k.Pause, k.Redraw, k.Help},
		{k.Window, k.Stages, k.Picker},
		{k.Focus, k.FocusBack, k.Up, k.Down},
		{k.Faster, k.Slower},
	}
}

// Keys are every key of the screen: the root's, the replay's and those of
// the panes with keys of their own. The help (?) lists them as bound.
type Keys struct {
	Root      KeyMap
	Replay    ReplayKeys
	Processes proctable.KeyMap
	HotCode   hotcode.KeyMap
	Ranks     ranks.KeyMap
}

// DefaultBindings are the keys of a screen without a settings file.
func DefaultBindings() Keys {
	return Keys{Root: DefaultKeys, Replay: DefaultReplayKeys, Processes: proctable.DefaultKeys,
		HotCode: hotcode.DefaultKeys, Ranks: ranks.DefaultKeys}
}

// Action is one key that can be rebound: its name in the settings file's
// [keys] table and its binding.
type Action struct {
	Name    string
	Binding *key.Binding
}

// Actions are k's keys that the settings file can rebind, by name: a new
// key of the screen is rebindable once it is a row here.
func (k *Keys) Actions() []Action {
	return []Action{
		{"quit", &k.Root.Quit}, {"pause", &k.Root.Pause}, {"focus", &k.Root.Focus}, {"focus-back", &k.Root.FocusBack},
		{"window", &k.Root.Window}, {"stages", &k.Root.Stages}, {"picker", &k.Root.Picker}, {"faster", &k.Root.Faster},
		{"slower", &k.Root.Slower}, {"redraw", &k.Root.Redraw}, {"up", &k.Root.Up}, {"down", &k.Root.Down}, {"help", &k.Root.Help},
		{"process-sort", &k.Processes.Sort}, {"process-filter", &k.Processes.Filter}, {"process-kill", &k.Processes.Kill},
		{"process-threads", &k.Processes.Threads}, {"hotcode-next", &k.HotCode.Next},
		{"rank-next", &k.Ranks.Next}, {"rank-prev", &k.Ranks.Prev},
		{"replay-back", &k.Replay.Back}, {"replay-forward", &k.Replay.Forward}, {"replay-start", &k.Replay.Start},
		{"replay-end", &k.Replay.End}, {"replay-slower", &k.Replay.Slower}, {"replay-faster", &k.Replay.Faster},
	}
}

// Bind makes keys (as a terminal names them: "q", "ctrl+q", "f6", "up")
// the keys of the action name; the help shows them in place of the
// defaults. An unknown action, no key, a key that names no key or Ctrl-C
// (which always stops pipetop) is an error; Clash finds a key two actions
// share once every binding is made.
func (k *Keys) Bind(name string, keys []string) error {
	i := slices.IndexFunc(k.Actions(), func(a Action) bool { return a.Name == name })
	if i < 0 {
		return fmt.Errorf("no key action named %q (want one of %s)", name, strings.Join(k.names(), ", "))
	}
	if len(keys) == 0 {
		return errors.New("no key given")
	}
	for _, kn := range keys {
		if err := CheckKey(kn); err != nil {
			return err
		}
	}
	b := k.Actions()[i].Binding
	*b = key.NewBinding(key.WithKeys(keys...), key.WithHelp(strings.Join(keys, "/"), b.Help().Desc))
	return nil
}

// Clash is a key that two actions share (the first two in Actions' order
// and the key), which would make one of them unreachable; ok is false
// when every key has one action.
func (k *Keys) Clash() (a, b, key string, ok bool) {
	owner := map[string]string{}
	for _, act := range k.Actions() {
		for _, kn := range act.Binding.Keys() {
			if first, taken := owner[kn]; taken {
				return first, act.Name, kn, true
			}
			owner[kn] = act.Name
		}
	}
	return "", "", "", false
}

// names are the actions' names.
func (k *Keys) names() []string {
	var out []string
	for _, a := range k.Actions() {
		out = append(out, a.Name)
	}
	return out
}

// Key names a terminal gives besides a character: the base of a key such
// as "ctrl+pgup".
var namedKeys = map[string]bool{"enter": true, "tab": true, "backspace": true, "esc": true, "space": true, "up": true,
	"down": true, "left": true, "right": true, "begin": true, "find": true, "insert": true, "delete": true, "select": true,
	"pgup": true, "pgdown": true, "home": true, "end": true}

// modifiers are the prefixes a key may carry, in the terminal's order.
var modifiers = []string{"ctrl", "alt", "shift", "meta", "hyper", "super"}

// CheckKey reports whether name names a key as the terminal reports it:
// modifiers ("ctrl+", "alt+", ...) before one character or a named key
// ("enter", "f6", "pgup"); Ctrl-C is not one: it always stops pipetop.
func CheckKey(name string) error {
	if name == "ctrl+c" {
		return fmt.Errorf("%q always stops pipetop: it cannot be bound", name)
	}
	base := name
	for _, m := range modifiers {
		base = strings.TrimPrefix(base, m+"+")
	}
	switch {
	case len([]rune(base)) == 1 && base != " ":
		return nil
	case namedKeys[base], isFunctionKey(base):
		return nil
	}
	return fmt.Errorf("%q is not a key: want a character or a key name (enter, tab, esc, space, up, down, left, right, home, end, pgup, pgdown, insert, delete, f1 to f63), after modifiers such as ctrl+, alt+, shift+", name)
}

// isFunctionKey reports whether name is f1 to f63.
func isFunctionKey(name string) bool {
	var n int
	_, err := fmt.Sscanf(name, "f%d", &n)
	return err == nil && n >= 1 && n <= 63 && fmt.Sprintf("f%d", n) == name
}
