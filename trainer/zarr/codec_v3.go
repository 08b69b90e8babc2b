package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// codecMeta is one entry of a Zarr v3 codecs list (and the form of the
// chunk grid and key encoding). A bare string is accepted for a codec
// without configuration.
type codecMeta struct {
	Name          string          `json:"name"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
	// MustUnderstand may mark an extension as optional; every codec this
	// package reads is understood, and any other is an error regardless.
	MustUnderstand *bool `json:"must_understand,omitempty"`
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *codecMeta) UnmarshalJSON(b []byte) error {
	if s := ""; json.Unmarshal(b, &s) == nil {
		*c = codecMeta{Name: s}
		return nil
	}
	type plain codecMeta
	var p plain
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return fmt.Errorf("codec %s: %w", b, err)
	}
	if p.Name == "" {
		return fmt.Errorf("codec %s: missing \"name\"", b)
	}
	*c = codecMeta(p)
	return nil
}

// config decodes the configuration into v, rejecting unknown fields; an
// absent configuration leaves v as it is.
func (c codecMeta) config(v any) error {
	raw := bytes.TrimSpace(c.Configuration)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := decodeConfig(raw, v); err != nil {
		return fmt.Errorf("%s configuration: %w", c.Name, err)
	}
	return nil
}

// supportedV3 lists the codecs a v3 array may use, for error messages.
const supportedV3 = "bytes, transpose, blosc, zstd, gzip, crc32c, sharding_indexed"

// bytesCodecV3 parses a v3 bytes-to-bytes codec.
func bytesCodecV3(c codecMeta) (Codec, error) {
	switch c.Name {
	case "blosc":
		return bloscV3(c)
	case "zstd":
		cfg := struct {
			Level    int  `json:"level"`
			Checksum bool `json:"checksum"`
		}{}
		if err := c.config(&cfg); err != nil {
			return nil, err
		}
		z, err := NewZstd(cfg.Level)
		if err != nil {
			return nil, err
		}
		z.Checksum = cfg.Checksum
		return z, nil
	case "gzip":
		cfg := struct {
			Level int `json:"level"`
		}{Level: 5}
		if err := c.config(&cfg); err != nil {
			return nil, err
		}
		return NewGzip(cfg.Level)
	case "crc32c":
		if err := c.config(&struct{}{}); err != nil {
			return nil, err
		}
		return crc32cCodec{}, nil
	}
	return nil, fmt.Errorf("codec %q is not supported (supported: %s)", c.Name, supportedV3)
}

// bloscV3 parses the v3 blosc codec, whose shuffle is a name.
func bloscV3(c codecMeta) (Codec, error) {
	cfg := struct {
		CName     string          `json:"cname"`
		CLevel    *int            `json:"clevel"`
		Shuffle   json.RawMessage `json:"shuffle"`
		TypeSize  int             `json:"typesize"`
		BlockSize int             `json:"blocksize"`
	}{CName: "zstd"}
	if err := c.config(&cfg); err != nil {
		return nil, err
	}
	level := 5
	if cfg.CLevel != nil {
		level = *cfg.CLevel
	}
	shuffle := NoShuffle
	if len(cfg.Shuffle) > 0 {
		var name string
		if err := json.Unmarshal(cfg.Shuffle, &name); err != nil {
			return nil, fmt.Errorf("blosc configuration: shuffle %s: want \"noshuffle\", \"shuffle\" or \"bitshuffle\"", cfg.Shuffle)
		}
		var ok bool
		if shuffle, ok = map[string]int{"noshuffle": NoShuffle, "shuffle": ByteShuffle, "bitshuffle": BitShuffle}[name]; !ok {
			return nil, fmt.Errorf("blosc configuration: shuffle %q: want \"noshuffle\", \"shuffle\" or \"bitshuffle\"", name)
		}
	}
	return NewBlosc(cfg.CName, level, shuffle, cfg.BlockSize)
}

// codecMetaV3 is the v3 form of a compressor for elements of itemSize bytes.
func codecMetaV3(c Codec, itemSize int) (map[string]any, error) {
	switch c := c.(type) {
	case *Blosc:
		shuffle := c.Shuffle
		if shuffle == AutoShuffle {
			shuffle = ByteShuffle
			if itemSize == 1 {
				shuffle = BitShuffle
			}
		}
		name := map[int]string{NoShuffle: "noshuffle", ByteShuffle: "shuffle", BitShuffle: "bitshuffle"}[shuffle]
		return codecJSON("blosc", map[string]any{"cname": c.CName, "clevel": c.CLevel, "shuffle": name,
			"typesize": itemSize, "blocksize": c.BlockSize}), nil
	case *Zstd:
		return codecJSON("zstd", map[string]any{"level": c.Level, "checksum": false}), nil
	case *Zlib:
		if c.Gzip {
			return codecJSON("gzip", map[string]any{"level": c.Level}), nil
		}
	case crc32cCodec:
		return map[string]any{"name": "crc32c"}, nil
	}
	return nil, fmt.Errorf("codec %s has no Zarr v3 form (use blosc-*, zstd, gzip or none)", CodecName(c))
}

func codecJSON(name string, cfg map[string]any) map[string]any {
	return map[string]any{"name": name, "configuration": cfg}
}
