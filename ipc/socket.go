package ipc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DirEnv overrides the socket directory (used by tests and by users with an
// unusual runtime directory).
const DirEnv = "PIPETOP_SOCKET_DIR"

// Dir returns the directory where trainers put their sockets:
// $PIPETOP_SOCKET_DIR, else $XDG_RUNTIME_DIR/pipetop, else /tmp/pipetop-UID.
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "pipetop")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("pipetop-%d", os.Getuid()))
}

// ensureDir creates dir with mode 0700, or checks that an existing one is
// ours and not writable by others.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create socket dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat socket dir: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("socket dir %s belongs to uid %d, not %d", dir, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		// Others could replace our socket. Never chmod a directory we did
		// not make (it could be /tmp): say what is wrong instead.
		return fmt.Errorf("socket dir %s has mode %04o: others can write to it (chmod 700 %s, or choose another with %s)", dir, perm, dir, DirEnv)
	}
	return nil
}

// Endpoint is a trainer socket found in the socket directory.
type Endpoint struct {
	Path string `json:"path"`
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

// SocketName is the file name of a trainer's socket.
func SocketName(name string, pid int) string {
	return fmt.Sprintf("%s.%d.sock", sanitize(name), pid)
}

func sanitize(name string) string {
	if name == "" {
		return "trainer"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\n' {
			return '_'
		}
		return r
	}, name)
}

// ParseSocketName splits NAME.PID.sock.
func ParseSocketName(file string) (name string, pid int, ok bool) {
	base, found := strings.CutSuffix(file, ".sock")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(base[i+1:])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return base[:i], pid, true
}

// List returns the live trainer sockets in Dir, sorted by name then pid,
// and removes sockets whose process is gone.
func List() ([]Endpoint, error) { return ListDir(Dir()) }

// ListDir is List for a given directory. A missing directory holds no
// trainers.
func ListDir(dir string) ([]Endpoint, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list trainers in %s: %w", dir, err)
	}
	var out []Endpoint
	for _, e := range entries {
		name, pid, ok := ParseSocketName(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if stale(path, pid) {
			os.Remove(path)
			continue
		}
		out = append(out, Endpoint{Path: path, Name: name, PID: pid})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].PID < out[j].PID
	})
	return out, nil
}

// stale reports whether the socket's owner is gone: its pid does not exist,
// or nothing accepts connections on it (the pid was reused).
func stale(path string, pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	c, err := net.DialTimeout("unix", path, 200*time.Millisecond)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	c.Close()
	return false
}

// ErrNoTrainer is wrapped by Find's error when no live trainer matches.
var ErrNoTrainer = errors.New("no live trainer")

// Find picks one endpoint by spec: a socket path, a pid, or a trainer name.
// An empty spec matches when exactly one trainer is live.
func Find(eps []Endpoint, spec string) (Endpoint, error) {
	if strings.Contains(spec, "/") {
		if _, err := os.Stat(spec); err != nil {
			return Endpoint{}, fmt.Errorf("%w at %s: %w", ErrNoTrainer, spec, err)
		}
		name, pid, _ := ParseSocketName(filepath.Base(spec))
		return Endpoint{Path: spec, Name: name, PID: pid}, nil
	}
	var match []Endpoint
	for _, ep := range eps {
		if spec == "" || spec == ep.Name || spec == strconv.Itoa(ep.PID) {
			match = append(match, ep)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0 && spec == "":
		return Endpoint{}, fmt.Errorf("%w in %s", ErrNoTrainer, Dir())
	case len(match) == 0:
		return Endpoint{}, fmt.Errorf("%w named or with pid %q in %s", ErrNoTrainer, spec, Dir())
	}
	// Several trainers share a name: the newest (highest pid) is the one a
	// restarted run wants, but say so only when the spec was a name.
	if spec != "" {
		return match[len(match)-1], nil
	}
	return Endpoint{}, fmt.Errorf("%d live trainers: pick one by path, pid or name", len(match))
}
