package units

import (
	"math"
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"dur µs", Dur(812e3), "812 µs"},
		{"dur ms", Dur(6.14e6), "6.1 ms"},
		{"dur big ms", Dur(152e6), "152 ms"},
		{"dur s", Dur(1.2e9), "1.20 s"},
		{"dur rounds up to ms", Dur(999.7e3), "1.0 ms"},
		{"dur rounds up to s", Dur(999.9e6), "1.00 s"},
		{"dur negative", Dur(-1), "–"},
		{"pct", Pct(0.634), "63 %"},
		{"bytes small", Bytes(812), "812 B"},
		{"bytes KiB", Bytes(2048), "2.0 KiB"},
		{"bytes GiB", Bytes(1.5 * (1 << 30)), "1.5 GiB"},
		{"bytes 3-digit", Bytes(200 * (1 << 20)), "200 MiB"},
		{"rate small", Rate(0.5234), "0.52"},
		{"rate mid", Rate(98.71), "98.7"},
		{"rate big", Rate(6317.4), "6,317"},
		{"count", Count(1234567), "1,234,567"},
		{"count short", Count(123), "123"},
		{"count negative", Count(-1234), "-1,234"},
		{"count negative short", Count(-12), "-12"},
		{"count lowest", Count(math.MinInt64), "-9,223,372,036,854,775,808"},
		{"rate past int64", Rate(1e308), "1e+308"},
		{"rate highest int64", Rate(9.2e18), "9,200,000,000,000,000,000"},
		{"age s", Age(42 * time.Second), "42s"},
		{"age m", Age(192 * time.Second), "3m12s"},
		{"age h", Age(2*time.Hour + 5*time.Minute), "2h05m"},
		{"age d", Age(76 * time.Hour), "3d04h"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
