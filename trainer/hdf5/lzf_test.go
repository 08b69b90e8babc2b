package hdf5

import (
	"bytes"
	"testing"
)

// goLZF is a plain Go LZF decoder (liblzf's format) to check the C one.
func goLZF(in []byte, n int) ([]byte, bool) {
	var out []byte
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			l := ctrl + 1
			if i+l > len(in) || len(out)+l > n {
				return nil, false
			}
			out = append(out, in[i:i+l]...)
			i += l
			continue
		}
		l := ctrl >> 5
		back := (ctrl&0x1f)<<8 + 1
		if i >= len(in) {
			return nil, false
		}
		if l == 7 {
			l += int(in[i])
			i++
			if i >= len(in) {
				return nil, false
			}
		}
		back += int(in[i])
		i++
		if len(out)+l+2 > n || back > len(out) {
			return nil, false
		}
		for k := 0; k < l+2; k++ {
			out = append(out, out[len(out)-back])
		}
	}
	return out, len(out) > 0
}

func TestLZF(t *testing.T) {
	// "abcabcabcabc": literal "abc" then a back reference of 9 at distance 3.
	got, err := lzfDecode([]byte{2, 'a', 'b', 'c', 7 << 5, 0, 2}, 64)
	if err != nil || string(got) != "abcabcabcabc" {
		t.Errorf("decoded %q, %v", got, err)
	}
	if _, err := lzfDecode([]byte{2, 'a', 'b', 'c', 7 << 5, 0, 2}, 8); err == nil {
		t.Error("a block longer than the output: no error")
	}
	if _, err := lzfDecode([]byte{0x20, 5}, 64); err == nil {
		t.Error("a back reference before the start: no error")
	}
}

// FuzzLZF checks the C decoder against the Go one on any input.
func FuzzLZF(f *testing.F) {
	f.Add([]byte{2, 'a', 'b', 'c', 7 << 5, 0, 2}, uint16(64))
	f.Add([]byte{31}, uint16(8))
	f.Fuzz(func(t *testing.T, in []byte, n uint16) {
		want, ok := goLZF(in, int(n))
		got, err := lzfDecode(in, int(n))
		if ok != (err == nil) || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("C decoder %q %v, Go decoder %q %v", got, err, want, ok)
		}
	})
}
