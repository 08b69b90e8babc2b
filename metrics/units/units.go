// Package units formats numbers for pipetop's panes and verdicts: durations,
// byte sizes, rates, shares and counts, each short and of stable width so
// that a redraw changes as few cells as possible.
package units

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Dur formats nanoseconds as "812 µs", "6.1 ms", "152 ms" or "1.20 s".
func Dur(ns float64) string {
	switch {
	case math.IsNaN(ns) || ns < 0:
		return "–"
	case ns >= 999.5e6:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 99.95e6:
		return fmt.Sprintf("%.0f ms", ns/1e6)
	case ns >= 999.5e3:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
}

// Pct formats a 0..1 share as "63 %".
func Pct(share float64) string {
	if math.IsNaN(share) {
		return "– %"
	}
	return fmt.Sprintf("%.0f %%", 100*share)
}

// Bytes formats a byte count with a binary prefix: "812 B", "1.2 GiB".
func Bytes(b float64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%.0f B", b)
	}
	prefixes := "KMGTPE"
	exp := 0
	for b >= unit*unit && exp < len(prefixes)-1 {
		b /= unit
		exp++
	}
	v := b / unit
	if v >= 100 {
		return fmt.Sprintf("%.0f %ciB", v, prefixes[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, prefixes[exp])
}

// Rate formats a per-second rate: "0.52", "98.7", "6,317".
func Rate(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "–"
	case x < 10:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case x < 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= math.MaxInt64:
		// Past what an int64 holds (a damaged or hostile file's figure).
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	return Count(int64(math.Round(x)))
}

// Count formats an integer with thousands separators: "12,345".
func Count(n int64) string {
	s, sign := strconv.FormatInt(n, 10), ""
	if n < 0 {
		// The digits of the string: -n overflows for math.MinInt64.
		s, sign = s[1:], "-"
	}
	if len(s) <= 3 {
		return sign + s
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	lead := len(s) % 3
	if lead == 0 {
		lead = 3
	}
	out = append(out, s[:lead]...)
	for i := lead; i < len(s); i += 3 {
		out = append(out, ',')
		out = append(out, s[i:i+3]...)
	}
	return sign + string(out)
}

// Age formats a duration coarsely for uptimes and ETAs: "42s", "3m12s",
// "2h05m", "3d04h".
func Age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// Clock formats a position in a run as 1:02:03 or 2:03.
func Clock(d time.Duration) string {
	d = max(0, d).Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}
