// Package flametest checks speedscope files for the tests of pipetop
// flame: against the file format's JSON schema (speedscope.schema.json,
// validated by a small checker of the schema keywords it uses: type,
// required, properties, items, enum, const, oneOf and local $ref), and
// for what a schema cannot say (frame indices in range, a weight per
// sample, endValue the sum of the weights).
package flametest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

//go:embed speedscope.schema.json
var schemaJSON []byte

// File is a speedscope file as the checks read it.
type File struct {
	Shared struct {
		Frames []struct {
			Name string `json:"name"`
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"frames"`
	} `json:"shared"`
	Profiles []struct {
		Type       string    `json:"type"`
		Name       string    `json:"name"`
		StartValue float64   `json:"startValue"`
		EndValue   float64   `json:"endValue"`
		Samples    [][]int   `json:"samples"`
		Weights    []float64 `json:"weights"`
	} `json:"profiles"`
	ActiveProfileIndex int `json:"activeProfileIndex"`
}

// Check validates doc against the schema and the rules beyond it, and
// returns it decoded.
func Check(doc []byte) (*File, error) {
	var schema, v any
	if err := json.Unmarshal(schemaJSON, &schema); err != nil {
		return nil, fmt.Errorf("speedscope schema: %w", err)
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := checker{root: schema.(map[string]any)}
	if err := c.check(c.root, v, "$"); err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(doc, &f); err != nil {
		return nil, err
	}
	return &f, f.semantics()
}

func (f *File) semantics() error {
	if len(f.Profiles) > 0 && (f.ActiveProfileIndex < 0 || f.ActiveProfileIndex >= len(f.Profiles)) {
		return fmt.Errorf("activeProfileIndex %d of %d profiles", f.ActiveProfileIndex, len(f.Profiles))
	}
	for _, p := range f.Profiles {
		if len(p.Samples) != len(p.Weights) {
			return fmt.Errorf("profile %q: %d samples, %d weights", p.Name, len(p.Samples), len(p.Weights))
		}
		var sum float64
		for i, s := range p.Samples {
			for _, j := range s {
				if j < 0 || j >= len(f.Shared.Frames) {
					return fmt.Errorf("profile %q sample %d: frame %d of %d", p.Name, i, j, len(f.Shared.Frames))
				}
			}
			sum += p.Weights[i]
		}
		if math.Abs(p.EndValue-p.StartValue-sum) > 1e-6*math.Max(1, sum) {
			return fmt.Errorf("profile %q: endValue-startValue %v, the weights add up to %v", p.Name, p.EndValue-p.StartValue, sum)
		}
	}
	return nil
}

// checker validates values against the schema keywords the speedscope
// schema uses.
type checker struct{ root map[string]any }

func (c checker) check(s map[string]any, v any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		def, err := c.resolve(ref)
		if err != nil {
			return err
		}
		return c.check(def, v, at)
	}
	if want, ok := s["const"]; ok && !equal(want, v) {
		return fmt.Errorf("%s: %v, want %v", at, v, want)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return equal(e, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, enum)
	}
	if t, ok := s["type"].(string); ok && !hasType(v, t) {
		return fmt.Errorf("%s: %T, want %s", at, v, t)
	}
	if one, ok := s["oneOf"].([]any); ok {
		var errs []string
		matched := 0
		for _, o := range one {
			if err := c.check(o.(map[string]any), v, at); err != nil {
				errs = append(errs, err.Error())
			} else {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Errorf("%s: matches %d of oneOf, want 1 (%s)", at, matched, strings.Join(errs, "; "))
		}
	}
	if obj, ok := v.(map[string]any); ok {
		for _, r := range asList(s["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: %q is required", at, r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, pv := range obj {
			if ps, ok := props[k].(map[string]any); ok {
				if err := c.check(ps, pv, at+"."+k); err != nil {
					return err
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range arr {
				if err := c.check(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c checker) resolve(ref string) (map[string]any, error) {
	name, ok := strings.CutPrefix(ref, "#/definitions/")
	defs, _ := c.root["definitions"].(map[string]any)
	def, found := defs[name].(map[string]any)
	if !ok || !found {
		return nil, fmt.Errorf("schema: unknown $ref %q", ref)
	}
	return def, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	}
	return false
}
