package feed

import (
	"github.com/pipetop/pipetop/metrics/stage"
)

// codeWindow keeps a trainer's stacks frames and the profile of the last
// window asked for, made again only when a frame came or the window
// changed (frames come once a second; refreshes may be more frequent).
type codeWindow struct {
	ring   *stage.CodeRing
	frames int64 // frames added
	key    codeKey
	cached *stage.CodeProfile
}

// codeKey is what a cached profile was made of.
type codeKey struct {
	frames int64
	window float64
}

func (c *codeWindow) add(s *stage.StackSamples) {
	if c.ring == nil {
		c.ring = stage.NewCodeRing(0)
	}
	c.ring.Add(s)
	c.frames++
}

// profile profiles the frames taken within seconds of the newest one (all
// held frames when seconds is 0), with the code of the periodic pauses of
// s (the summary of the same window; may be nil); nil without any. The
// profile is shared between calls: callers must not change it.
func (c *codeWindow) profile(seconds float64, s *stage.Summary) *stage.CodeProfile {
	if c.ring == nil {
		return nil
	}
	k := codeKey{c.frames, seconds}
	if k == c.key && c.cached != nil {
		return c.cached
	}
	newest, ok := c.ring.Newest()
	if !ok {
		return nil
	}
	from := int64(0)
	if seconds > 0 {
		from = newest - int64(seconds*1e9)
	}
	c.key, c.cached = k, c.ring.PauseProfile(from, newest, s)
	return c.cached
}
