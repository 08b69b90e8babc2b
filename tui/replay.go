package tui

import (
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// Replayer is a recording being played (monitor/replay.Player).
type Replayer interface {
	Seek(d time.Duration)
	SeekStart()
	SeekEnd()
	SetSpeed(step int)
	SetPaused(paused bool)
}

// SeekStep is how far ← and → move a replay.
const SeekStep = 10 * time.Second

// ReplayKeys are the keys of pipetop replay.
type ReplayKeys struct {
	Back, Forward, Start, End, Slower, Faster key.Binding
}

// DefaultReplayKeys are the replay keys.
var DefaultReplayKeys = ReplayKeys{
	Back:    key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "back 10 s")),
	Forward: key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "forward 10 s")),
	Start:   key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "start")),
	End:     key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "end")),
	Slower:  key.NewBinding(key.WithKeys("["), key.WithHelp("[", "play slower")),
	Faster:  key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "play faster (up to 64x)")),
}

// bindings lists the replay keys for the help overlay.
func (k ReplayKeys) bindings() []key.Binding {
	return []key.Binding{k.Back, k.Forward, k.Start, k.End, k.Slower, k.Faster}
}

// replayKey applies a replay key; it reports whether k was one.
func (m *Model) replayKey(k tea.KeyPressMsg) bool {
	r, keys := m.opts.Replay, m.opts.Keys.Replay
	switch {
	case key.Matches(k, keys.Back):
		r.Seek(-SeekStep)
	case key.Matches(k, keys.Forward):
		r.Seek(SeekStep)
	case key.Matches(k, keys.Start):
		r.SeekStart()
	case key.Matches(k, keys.End):
		r.SeekEnd()
	case key.Matches(k, keys.Slower):
		r.SetSpeed(-1)
	case key.Matches(k, keys.Faster):
		r.SetSpeed(+1)
	default:
		return false
	}
	return true
}
