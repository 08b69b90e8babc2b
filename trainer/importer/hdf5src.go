package importer

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pipetop/pipetop/trainer/hdf5"
)

// demoPath matches robomimic's per-demonstration datasets.
var demoPath = regexp.MustCompile(`^data/demo_(\d+)/(actions|obs/.+)$`)

// h5src is an open HDF5 source: its file and every dataset opened.
type h5src struct {
	path string
	f    *hdf5.File
	ds   map[string]*hdf5.Dataset
}

func (h *h5src) get(name string) (*hdf5.Dataset, error) {
	if d, ok := h.ds[name]; ok {
		return d, nil
	}
	d, err := h.f.Dataset(name)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	h.ds[name] = d
	return d, nil
}

func (h *h5src) close() error {
	for _, d := range h.ds {
		d.Close()
	}
	return h.f.Close()
}

// planHDF5 plans the import of a robomimic or flat HDF5 file.
func planHDF5(file string, o Options) (*plan, error) {
	f, err := hdf5.Open(file)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	h := &h5src{path: file, f: f, ds: map[string]*hdf5.Dataset{}}
	names, err := f.Datasets()
	if err != nil {
		h.close()
		return nil, fmt.Errorf("import: %w", err)
	}
	robomimic := false
	for _, n := range names {
		robomimic = robomimic || demoPath.MatchString(n)
	}
	var p *plan
	if robomimic {
		p, err = planRobomimic(h, names, o)
	} else {
		p, err = planFlat(h, names, o)
	}
	if err != nil {
		h.close()
		return nil, err
	}
	p.close = h.close
	if st, err := os.Stat(file); err == nil {
		p.bytesIn = st.Size()
	}
	p.attrs = map[string]any{"importer": "pipetrain data import", "source": file, "layout": map[bool]string{true: "robomimic", false: "flat"}[robomimic]}
	if o.FPS > 0 {
		p.attrs["fps"] = o.FPS
	}
	return p, nil
}

// isCamera reports whether d is a (T,H,W,3) uint8 image dataset.
func isCamera(d *hdf5.Dataset) bool {
	return len(d.Shape) == 4 && d.Shape[3] == 3 && d.DType.Kind == hdf5.Uint && d.DType.Size == 1
}

// isVector reports whether d is a (T,) or (T,D) number dataset.
func isVector(d *hdf5.Dataset) bool {
	t := d.DType
	known := (t.Kind == hdf5.Float && (t.Size == 4 || t.Size == 8)) || ((t.Kind == hdf5.Int || t.Kind == hdf5.Uint) && t.Size <= 8 && t.Size&(t.Size-1) == 0)
	return (len(d.Shape) == 1 || len(d.Shape) == 2) && known
}

func width(d *hdf5.Dataset) int {
	if len(d.Shape) == 1 {
		return 1
	}
	return d.Shape[1]
}

// planRobomimic maps data/demo_N/obs/<key> and data/demo_N/actions, the
// demonstrations in the order of N, into one replay buffer.
func planRobomimic(h *h5src, names []string, o Options) (*plan, error) {
	order := demoOrder(names)
	demo := func(k int) string { return fmt.Sprintf("data/demo_%d", k) }
	perDemo := func(name string) []string {
		out := make([]string, len(order))
		for i, k := range order {
			out[i] = demo(k) + "/" + name
		}
		return out
	}
	p := &plan{}
	cams, vecs, err := h.robomimicKeys(p, demo(order[0]), names, o.Keys)
	if err != nil {
		return nil, err
	}
	if len(cams) == 0 {
		return nil, fmt.Errorf("import %s: no (T,H,W,3) uint8 camera among the observations of %s (%s)", h.path, demo(order[0]), strings.Join(p.notes, "; "))
	}
	for _, k := range order {
		if err := h.addDemo(p, demo(k), demo(order[0]), append(append([]string(nil), cams...), vecs...)); err != nil {
			return nil, err
		}
	}
	if err := h.cameraColumns(p, cams, perDemo, "obs/"); err != nil {
		return nil, err
	}
	if len(vecs) > 0 {
		parts := make([][]string, len(vecs))
		labels := make([]string, len(vecs))
		for i, k := range vecs {
			parts[i] = perDemo("obs/" + k)
			labels[i] = displayKey(parts[i], "obs/"+k)
		}
		if p.state, err = h.vectorColumn("state", labels, parts, p); err != nil {
			return nil, err
		}
	}
	actions := perDemo("actions")
	if p.action, err = h.vectorColumn("action", []string{displayKey(actions, "actions")}, [][]string{actions}, p); err != nil {
		return nil, err
	}
	p.notes = append(p.notes, fmt.Sprintf("%d demonstrations (data/demo_%d .. data/demo_%d) in order, each an episode", len(order), order[0], order[len(order)-1]))
	return p, nil
}

// demoOrder is the numbers N of the file's data/demo_N groups, ascending.
func demoOrder(names []string) []int {
	seen := map[int]bool{}
	var order []int
	for _, n := range names {
		if m := demoPath.FindStringSubmatch(n); m != nil {
			k, _ := strconv.Atoi(m[1])
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
	}
	sort.Ints(order)
	return order
}

// robomimicKeys sorts the observation keys to import (keys, or all of the
// first demonstration's) into cameras and low-dim vectors; others are
// skipped with a note, or an error when keys named them.
func (h *h5src) robomimicKeys(p *plan, first string, names, keys []string) (cams, vecs []string, err error) {
	named := len(keys) > 0
	if !named {
		for _, n := range names {
			if rest, ok := strings.CutPrefix(n, first+"/obs/"); ok {
				keys = append(keys, rest)
			}
		}
	}
	for _, k := range keys {
		d, err := h.get(first + "/obs/" + k)
		if err != nil {
			return nil, nil, fmt.Errorf("import %s: observation key %q: %w", h.path, k, err)
		}
		switch what := fmt.Sprintf("%s/obs/%s is %s %v: neither a (T,H,W,3) uint8 camera nor a (T,D) number array", first, k, d.DType, d.Shape); {
		case isCamera(d):
			cams = append(cams, k)
		case isVector(d):
			vecs = append(vecs, k)
		case named:
			return nil, nil, fmt.Errorf("import %s: %s", h.path, what)
		default:
			p.notes = append(p.notes, "skipped "+what)
		}
	}
	return cams, vecs, nil
}

// addDemo checks one demonstration has every key, each as long as its
// actions, and appends its end to p.ends.
func (h *h5src) addDemo(p *plan, demo, first string, keys []string) error {
	a, err := h.get(demo + "/actions")
	if err != nil {
		return fmt.Errorf("import %s: %s has no actions: %w", h.path, demo, err)
	}
	if len(a.Shape) == 0 {
		return fmt.Errorf("import %s: %s/actions is a scalar", h.path, demo)
	}
	for _, key := range keys {
		d, err := h.get(demo + "/obs/" + key)
		if err != nil {
			return fmt.Errorf("import %s: %s lacks obs/%s, which %s has: %w", h.path, demo, key, first, err)
		}
		if len(d.Shape) == 0 || d.Shape[0] != a.Shape[0] {
			return fmt.Errorf("import %s: %s/obs/%s has shape %v but %s/actions has %d steps", h.path, demo, key, d.Shape, demo, a.Shape[0])
		}
	}
	var prev int64
	if len(p.ends) > 0 {
		prev = p.ends[len(p.ends)-1]
	}
	if a.Shape[0] == 0 {
		return fmt.Errorf("import %s: %s has no steps", h.path, demo)
	}
	p.ends = append(p.ends, prev+int64(a.Shape[0]))
	return nil
}

// cameraColumns adds a camera column per key, each the concatenation of
// the datasets perDemo(prefix+key) lists.
func (h *h5src) cameraColumns(p *plan, keys []string, perDemo func(string) []string, prefix string) error {
	var size []int
	for i, k := range keys {
		names := perDemo(prefix + k)
		if size == nil {
			size = h.ds[names[0]].Shape[1:]
		}
		for _, n := range names {
			d := h.ds[n]
			if !isCamera(d) || d.Shape[1] != size[0] || d.Shape[2] != size[1] {
				return fmt.Errorf("import %s: camera %s is %s %v, but the first camera's frames are %dx%dx3 uint8: the loader needs every camera in one size (choose cameras with --keys)", h.path, n, d.DType, d.Shape, size[0], size[1])
			}
			if miss, ok := d.Missing(); ok {
				return fmt.Errorf("import %s: dataset %s is compressed with %s, which this libhdf5 cannot decode (make the filter's plugin available through HDF5_PLUGIN_PATH, where the writer's HDF5 found it)", h.path, n, miss)
			}
		}
		ds := make([]*hdf5.Dataset, len(names))
		for j, n := range names {
			ds[j] = h.ds[n]
		}
		T := p.ends[len(p.ends)-1]
		p.cams = append(p.cams, column{key: fmt.Sprintf("camera%d", i), source: fmt.Sprintf("%s:%s", h.path, displayKey(names, prefix+k)),
			shape: []int{int(T), size[0], size[1], 3}, open: func() (rowReader, error) { return &h5rows{ds: [][]*hdf5.Dataset{ds}}, nil }})
	}
	return nil
}

// displayKey names a column's source: the one dataset, or the pattern
// data/demo_*/key.
func displayKey(names []string, key string) string {
	if len(names) == 1 {
		return names[0]
	}
	return "data/demo_*/" + key
}

// vectorColumn builds a float32 (T,D) column out of number datasets:
// parts[i] lists part i's dataset per episode, labels[i] names it; their
// columns are concatenated in order.
func (h *h5src) vectorColumn(name string, labels []string, parts [][]string, p *plan) (*column, error) {
	ds := make([][]*hdf5.Dataset, len(parts))
	width0 := 0
	var src []string
	for i, names := range parts {
		var w int
		for j, n := range names {
			d, err := h.get(n)
			if err != nil {
				return nil, err
			}
			if !isVector(d) {
				return nil, fmt.Errorf("import %s: %s is %s %v: want a (T,) or (T,D) number array for %s", h.path, n, d.DType, d.Shape, name)
			}
			if miss, ok := d.Missing(); ok {
				return nil, fmt.Errorf("import %s: dataset %s is compressed with %s, which this libhdf5 cannot decode (make the filter's plugin available through HDF5_PLUGIN_PATH, where the writer's HDF5 found it)", h.path, n, miss)
			}
			if j == 0 {
				w = width(d)
			} else if width(d) != w {
				return nil, fmt.Errorf("import %s: %s has %d columns, %s has %d", h.path, n, width(d), names[0], w)
			}
			if d.DType.Kind == hdf5.Float && d.DType.Size == 8 && !strings.Contains(strings.Join(p.notes, "\n"), "float64") {
				p.notes = append(p.notes, "float64 arrays are stored as float32 (the loader's type for state and action): values rounded to the nearest float32")
			}
			ds[i] = append(ds[i], d)
		}
		src = append(src, fmt.Sprintf("%s[%d:%d]", labels[i], width0, width0+w))
		width0 += w
	}
	T := p.ends[len(p.ends)-1]
	return &column{key: name, source: fmt.Sprintf("%s:%s", h.path, strings.Join(src, " ")), shape: []int{int(T), width0},
		open: func() (rowReader, error) { return &h5rows{ds: ds, float: true}, nil }}, nil
}

// planFlat maps a file of arrays: (T,H,W,3) uint8 datasets are cameras;
// a dataset named action or actions is the action; other (T,) and (T,D)
// number datasets are concatenated into the state, in name order; a
// meta/episode_ends dataset gives the episodes (else one episode).
func planFlat(h *h5src, names []string, o Options) (*plan, error) {
	p := &plan{}
	cand := o.Keys
	if len(cand) == 0 {
		cand = names
	}
	T := -1
	if ends, ok, err := h.episodeEnds(names); err != nil {
		return nil, err
	} else if ok {
		p.ends = ends
		T = int(ends[len(ends)-1])
	}
	for _, n := range cand { // without episode ends, the first camera's frames
		if d, err := h.get(n); err != nil {
			return nil, err
		} else if T < 0 && isCamera(d) {
			T = d.Shape[0]
		}
	}
	if T < 0 {
		return nil, fmt.Errorf("import %s: no (T,H,W,3) uint8 camera dataset among %s", h.path, strings.Join(cand, ", "))
	}
	cams, vecs, action, err := h.flatKinds(p, cand, T, len(o.Keys) > 0)
	if err != nil {
		return nil, err
	}
	if p.ends == nil {
		p.ends = []int64{int64(T)}
		p.notes = append(p.notes, "no meta/episode_ends dataset: one episode")
	}
	one := func(n string) []string { return []string{n} }
	if err := h.cameraColumns(p, cams, one, ""); err != nil {
		return nil, err
	}
	if len(vecs) > 0 {
		parts := make([][]string, len(vecs))
		for i, v := range vecs {
			parts[i] = one(v)
		}
		if p.state, err = h.vectorColumn("state", vecs, parts, p); err != nil {
			return nil, err
		}
	}
	if action != "" {
		if p.action, err = h.vectorColumn("action", []string{action}, [][]string{one(action)}, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// flatKinds sorts a flat file's datasets of T frames into cameras, state
// vectors and the action; others are skipped with a note, or an error
// when named.
func (h *h5src) flatKinds(p *plan, cand []string, T int, named bool) (cams, vecs []string, action string, err error) {
	for _, n := range cand {
		if n == "meta/episode_ends" {
			continue
		}
		d := h.ds[n]
		skip := ""
		switch base := path.Base(n); {
		case len(d.Shape) == 0 || d.Shape[0] != T:
			skip = fmt.Sprintf("%v, not %d frames", d.Shape, T)
		case isCamera(d):
			cams = append(cams, n)
		case isVector(d) && (base == "action" || base == "actions") && action == "":
			action = n
		case isVector(d):
			vecs = append(vecs, n)
		default:
			skip = fmt.Sprintf("%s %v: neither a (T,H,W,3) uint8 camera nor a (T,D) number array", d.DType, d.Shape)
		}
		if skip != "" && named {
			return nil, nil, "", fmt.Errorf("import %s: dataset %s is %s", h.path, n, skip)
		} else if skip != "" {
			p.notes = append(p.notes, fmt.Sprintf("skipped %s: %s", n, skip))
		}
	}
	if len(cams) == 0 {
		return nil, nil, "", fmt.Errorf("import %s: no (T,H,W,3) uint8 camera dataset of %d frames", h.path, T)
	}
	return cams, vecs, action, nil
}

// episodeEnds reads a flat file's meta/episode_ends, if it has one.
func (h *h5src) episodeEnds(names []string) ([]int64, bool, error) {
	if !contains(names, "meta/episode_ends") {
		return nil, false, nil
	}
	d, err := h.get("meta/episode_ends")
	if err != nil {
		return nil, false, err
	}
	if len(d.Shape) != 1 || d.Shape[0] == 0 || d.DType.Kind == hdf5.Other || d.DType.Kind == hdf5.Float {
		return nil, false, fmt.Errorf("import %s: meta/episode_ends is %s %v: want (E,) integers", h.path, d.DType, d.Shape)
	}
	raw := make([]byte, d.RowBytes()*int64(d.Shape[0]))
	if err := d.ReadRows(0, d.Shape[0], raw); err != nil {
		return nil, false, err
	}
	ends := make([]int64, d.Shape[0])
	var prev int64
	for i := range ends {
		ends[i] = int64(number(raw[i*d.DType.Size:], d.DType))
		if ends[i] <= prev {
			return nil, false, fmt.Errorf("import %s: meta/episode_ends[%d] = %d after %d: must be increasing and positive", h.path, i, ends[i], prev)
		}
		prev = ends[i]
	}
	return ends, true, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
