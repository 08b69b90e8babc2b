package importer

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// ffmpegRows decodes a camera's frames with ffmpeg's command line, reading
// its raw RGB output from a pipe: exactly width*height*3 bytes a frame.
// ffmpeg rather than libav through cgo: it reads every codec and
// container the Debian or static builds have, its crashes on a corrupt
// file stay in its own process, pipetrain does not link a second large C
// library, and frames cost one copy through the pipe, a small share of
// decoding them.
type ffmpegRows struct {
	v          video
	cmd        *exec.Cmd
	out        io.ReadCloser
	stderr     *tailBuffer
	frameBytes int64
	frames     int // frames delivered so far
	done       bool
}

// ffmpegArgs decodes the first video stream of in to raw RGB on stdout:
// every stored frame once (-fps_mode passthrough: none duplicated or
// dropped to make a variable rate constant; -ignore_editlist: none cut by
// an edit list, so the count is the index's), not rotated by display
// metadata (-noautorotate: the frame size is the stored one).
func ffmpegArgs(in string) []string {
	return []string{"-v", "error", "-nostdin", "-noautorotate", "-ignore_editlist", "1", "-i", in, "-map", "0:v:0", "-fps_mode", "passthrough",
		"-f", "rawvideo", "-pix_fmt", "rgb24", "-"}
}

// videoRows reads a camera's frames from its files in order, one ffmpeg
// process at a time.
type videoRows struct {
	bin string
	eps []video
	i   int         // the file being read, or next
	cur *ffmpegRows // its decoder; nil between files
}

func (r *videoRows) read(dst []byte) error {
	for len(dst) > 0 {
		if r.cur == nil {
			if r.i >= len(r.eps) {
				return fmt.Errorf("import %s: asked for frames past the index's %d", r.eps[len(r.eps)-1].path, r.eps[len(r.eps)-1].track.Samples)
			}
			c, err := startFFmpeg(r.bin, r.eps[r.i])
			if err != nil {
				return err
			}
			r.cur = c
		}
		fb := r.cur.frameBytes
		if m := min(int64(r.cur.v.track.Samples-r.cur.frames), int64(len(dst))/fb); m > 0 {
			if err := r.cur.read(dst[:m*fb]); err != nil {
				return err
			}
			dst = dst[m*fb:]
		}
		if r.cur.frames == r.cur.v.track.Samples {
			err := r.cur.finish()
			r.cur, r.i = nil, r.i+1
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// finish ends the file being read: checked when all its frames came,
// stopped otherwise.
func (r *videoRows) finish() error {
	if r.cur == nil {
		return nil
	}
	err := r.cur.finish()
	r.cur = nil
	return err
}

func startFFmpeg(bin string, v video) (*ffmpegRows, error) {
	r := &ffmpegRows{v: v, stderr: &tailBuffer{max: 4096}, frameBytes: int64(v.track.Width) * int64(v.track.Height) * 3}
	r.cmd = exec.Command(bin, ffmpegArgs(v.path)...)
	r.cmd.Stderr = r.stderr
	var err error
	if r.out, err = r.cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("import %s: %w", v.path, err)
	}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("import %s: start ffmpeg (scripts/install-deps.sh installs it): %w", v.path, err)
	}
	return r, nil
}

func (r *ffmpegRows) read(dst []byte) error {
	n, err := io.ReadFull(r.out, dst)
	r.frames += int(int64(n) / r.frameBytes)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		werr := r.wait()
		return fmt.Errorf("import %s: stream %d: ffmpeg delivered %d frames, the index (stts/stsz) says %d: the video is shorter than its index (truncated or corrupt media data)%s",
			r.v.path, r.v.track.Index, r.frames, r.v.track.Samples, r.why(werr))
	}
	r.kill()
	return fmt.Errorf("import %s: stream %d: reading ffmpeg's output: %w", r.v.path, r.v.track.Index, err)
}

// finish checks ffmpeg delivered no more frames than the index says and
// exited cleanly; before then it stops ffmpeg.
func (r *ffmpegRows) finish() error {
	if r.done {
		return nil
	}
	if r.frames < r.v.track.Samples {
		r.kill()
		return nil
	}
	var one [1]byte
	if n, _ := io.ReadFull(r.out, one[:]); n > 0 {
		r.kill()
		return fmt.Errorf("import %s: stream %d: ffmpeg delivers more than the %d frames the index (stts/stsz) says", r.v.path, r.v.track.Index, r.v.track.Samples)
	}
	if err := r.wait(); err != nil {
		return fmt.Errorf("import %s: stream %d: ffmpeg failed after all %d frames%s", r.v.path, r.v.track.Index, r.frames, r.why(err))
	}
	return nil
}

func (r *ffmpegRows) wait() error {
	r.done = true
	io.Copy(io.Discard, r.out)
	return r.cmd.Wait()
}

func (r *ffmpegRows) kill() {
	r.done = true
	r.cmd.Process.Kill()
	r.out.Close()
	r.cmd.Wait()
}

// why is ffmpeg's exit status and last error line, for a message.
func (r *ffmpegRows) why(err error) string {
	var parts []string
	if err != nil {
		parts = append(parts, err.Error())
	}
	if s := strings.TrimSpace(r.stderr.String()); s != "" {
		lines := strings.Split(s, "\n")
		parts = append(parts, "ffmpeg: "+strings.TrimSpace(lines[len(lines)-1]))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
