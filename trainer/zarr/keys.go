package zarr

import (
	"fmt"
	"strconv"
	"strings"
)

// keyEncoding names the file of a chunk (or shard) from its grid index:
// Zarr v2's "3.0.1" or "3/0/1", and the v3 default encoding, which puts
// "c" in front: "c/3/0/1".
type keyEncoding struct {
	prefix bool // v3 default: keys start with "c"
	sep    string
}

// key is the store key of grid index idx.
func (k keyEncoding) key(idx []int) string {
	var b strings.Builder
	if k.prefix {
		b.WriteByte('c')
	} else if len(idx) == 0 {
		return "0"
	}
	for i, v := range idx {
		if i > 0 || k.prefix {
			b.WriteString(k.sep)
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}

// parseKeyEncodingV3 reads a v3 chunk_key_encoding (nil: the default, "/").
func parseKeyEncodingV3(m *codecMeta) (keyEncoding, error) {
	if m == nil {
		return keyEncoding{prefix: true, sep: "/"}, nil
	}
	cfg := struct {
		Separator string `json:"separator"`
	}{}
	if err := m.config(&cfg); err != nil {
		return keyEncoding{}, err
	}
	var k keyEncoding
	switch m.Name {
	case "default":
		k = keyEncoding{prefix: true, sep: "/"}
	case "v2":
		k = keyEncoding{sep: "."}
	default:
		return k, fmt.Errorf("chunk_key_encoding %q is not supported (want default or v2)", m.Name)
	}
	switch cfg.Separator {
	case "":
	case ".", "/":
		k.sep = cfg.Separator
	default:
		return k, fmt.Errorf("chunk_key_encoding separator %q: want \".\" or \"/\"", cfg.Separator)
	}
	return k, nil
}
