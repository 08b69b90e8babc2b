package bisect

import "testing"

// A phase stopped for want of a first step keeps what the script printed,
// not the KeyboardInterrupt traceback pipetop's SIGINT left.
func TestWithoutOurStop(t *testing.T) {
	const tb = "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    time.sleep(60)\nKeyboardInterrupt\n"
	for _, tc := range []struct{ name, in, want string }{
		{"only the stop", tb, ""},
		{"output before it", "loading shards\n" + tb, "loading shards"},
		{"the script's own error", "Traceback (most recent call last):\nValueError: bad\n", "Traceback (most recent call last):\nValueError: bad\n"},
		{"nothing", "", ""},
	} {
		if got := withoutOurStop(tc.in); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
