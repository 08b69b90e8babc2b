package ipc

import (
	"bytes"
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
	files, err := socketFiles(dir)
	var out []Endpoint
	for _, ep := range files {
		switch probe(ep.Path, ep.PID) {
		case ownerGone:
			os.Remove(ep.Path)
			continue
		case notListening:
			if reused(ep.Path, ep.PID) {
				os.Remove(ep.Path)
			}
			continue
		}
		out = append(out, ep)
	}
	return out, err
}

// Sockets returns the trainer socket files in Dir, sorted as List, without
// connecting to any (List does, to tell a live one): for a caller that
// dials the one it wants at once, and handles one that nobody listens on,
// so that the trainer counts that caller's connection alone.
func Sockets() ([]Endpoint, error) { return socketFiles(Dir()) }

// socketFiles are the trainer socket files in dir, by name then pid. A
// missing directory holds none.
func socketFiles(dir string) ([]Endpoint, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list trainers in %s: %w", dir, err)
	}
	var out []Endpoint
	for _, e := range entries {
		if name, pid, ok := ParseSocketName(e.Name()); ok {
			out = append(out, Endpoint{Path: filepath.Join(dir, e.Name()), Name: name, PID: pid})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].PID < out[j].PID
	})
	return out, nil
}

// socketState is what probe found behind a socket file.
type socketState int

const (
	listening    socketState = iota // accepts connections (or too busy to say no)
	notListening                    // refuses, but its pid lives: starting, or the pid was reused
	ownerGone                       // its pid does not exist: a stale file
)

// probe says whether a socket's owner is alive and listening. Only a
// socket whose pid is gone is stale: a live pid that refuses may be a
// trainer between bind and listen, whose file must not be removed.
func probe(path string, pid int) socketState {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return ownerGone
	}
	c, err := net.DialTimeout("unix", path, 200*time.Millisecond)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return notListening
		}
		return listening
	}
	c.Close()
	return listening
}

// reused reports whether the process now holding pid started after the
// socket file was made: then the file belongs to an earlier process of
// that pid. Unknown start times report false (keep the file).
func reused(path string, pid int) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	start, ok := startTime(pid)
	return ok && start.After(fi.ModTime().Add(time.Second))
}

// startTime is when process pid started, from /proc/PID/stat's start
// time (clock ticks after boot, 100 a second on Linux) and /proc/stat's
// boot time.
func startTime(pid int) (time.Time, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, false
	}
	// Fields after the command, which may hold spaces, start after ')'.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // field 22: starttime
	if err != nil {
		return time.Time{}, false
	}
	boot, ok := bootTime()
	if !ok {
		return time.Time{}, false
	}
	return boot.Add(time.Duration(ticks) * (time.Second / 100)), true
}

// bootTime reads btime from /proc/stat.
func bootTime() (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(sec, 0), err == nil
		}
	}
	return time.Time{}, false
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
