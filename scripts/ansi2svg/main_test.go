package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSGR(t *testing.T) {
	tests := []struct {
		params string
		want   attrs
	}{
		{"38;5;75", attrs{fg: "#5fafff"}},
		{"48;5;238", attrs{bg: "#444444"}},
		{"1;38;2;255;0;16", attrs{fg: "#ff0010", bold: true}},
		{"31;7", attrs{fg: "#e06c75", rev: true}},
		{"0", attrs{}},
		{"38;5", attrs{}},
	}
	for _, tt := range tests {
		var a attrs
		a.apply(tt.params)
		if a != tt.want {
			t.Errorf("apply(%q) = %+v, want %+v", tt.params, a, tt.want)
		}
	}
}

func TestSVG(t *testing.T) {
	capture := []string{"\x1b[38;5;75mGPU\x1b[0m <ok> & \x1b[48;5;238m idle \x1b[49m", "plain"}
	var b bytes.Buffer
	if err := writeSVG(&b, parseScreen(capture), 20, 3, "t"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{`fill="#5fafff"`, `>GPU</text>`, `&lt;ok&gt; &amp;`, `fill="#444444"`, `>plain</text>`, `width="192"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q:\n%s", want, svg)
		}
	}
}
