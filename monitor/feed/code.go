package feed

import (
	"github.com/pipetop/pipetop/metrics/stage"
)

// codeWindow keeps a trainer's stacks frames and the profiles of the last
// two windows asked for (the screen's and the end-of-run keeper's), each
// made again only when a frame came or another window was asked for
// (frames come once a second; refreshes may be more frequent).
type codeWindow struct {
	ring   *stage.CodeRing
	frames int64 // frames added
	cached [2]cachedProfile
	next   int // the entry of cached the next new window replaces
}

// cachedProfile is a profile and what it was made of.
type cachedProfile struct {
	frames  int64
	window  float64
	profile *stage.CodeProfile
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
	for i := range c.cached {
		if e := &c.cached[i]; e.profile != nil && e.frames == c.frames && e.window == seconds {
			return e.profile
		}
	}
	newest, ok := c.ring.Newest()
	if !ok {
		return nil
	}
	from := int64(0)
	if seconds > 0 {
		from = newest - int64(seconds*1e9)
	}
	i := c.next
	for j := range c.cached { // the entry of the same window, when there is one
		if c.cached[j].window == seconds && c.cached[j].profile != nil {
			i = j
		}
	}
	if i == c.next {
		c.next = (c.next + 1) % len(c.cached)
	}
	c.cached[i] = cachedProfile{frames: c.frames, window: seconds, profile: c.ring.PauseProfile(from, newest, s)}
	return c.cached[i].profile
}
