package zarr

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// dirHandle opens chunk files relative to an array's directory. The
// directory is opened once (O_PATH) so each chunk costs one path component
// lookup rather than a walk from the root; the descriptor is closed when
// the Array is garbage collected. Without a usable directory descriptor it
// falls back to full paths.
type dirHandle struct {
	path string
	once sync.Once
	fd   int
}

func newDirHandle(path string) *dirHandle { return &dirHandle{path: path, fd: -1} }

func (a *Array) dirHandle() *dirHandle {
	a.dir.once.Do(func() {
		fd, err := unix.Open(a.dir.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		a.dir.fd = fd
		runtime.AddCleanup(a, func(fd int) { unix.Close(fd) }, fd)
	})
	return a.dir
}

// open opens the file key of the directory for reading, with plain
// system calls: os.Open would also register every chunk file with the
// network poller, which a loader opening tens of thousands of files a
// second pays for in system time.
func (d *dirHandle) open(key string) (int, error) {
	for {
		var fd int
		var err error
		if d.fd >= 0 {
			fd, err = unix.Openat(d.fd, key, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		} else {
			fd, err = unix.Open(d.path+"/"+key, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readFile reads the whole chunk file key into buf[:0] (grown if needed):
// openat, fstat, read, close.
func (d *dirHandle) readFile(key string, buf []byte) ([]byte, error) {
	fd, err := d.open(key)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	n := int(st.Size)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	for off := 0; off < n; {
		m, err := unix.Read(fd, buf[off:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case m == 0:
			return nil, fmt.Errorf("read %d of %d bytes: %w", off, n, io.ErrUnexpectedEOF)
		}
		off += m
	}
	if buf == nil {
		buf = []byte{}
	}
	return buf, nil
}

// readAt fills buf from offset off of file key: openat, pread, close.
func (d *dirHandle) readAt(key string, buf []byte, off int64) error {
	fd, err := d.open(key)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return preadFull(fd, buf, off)
}

// readIndex reads len(buf) bytes of file key at the offset where(size)
// gives for the file's size, and returns the size; -1 when the file does
// not exist. A file shorter than buf is an error.
func (d *dirHandle) readIndex(key string, buf []byte, where func(size int64) int64) (int64, error) {
	fd, err := d.open(key)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	if st.Size < int64(len(buf)) {
		return 0, fmt.Errorf("truncated: %d bytes, less than its %d-byte index", st.Size, len(buf))
	}
	return st.Size, preadFull(fd, buf, where(st.Size))
}

func preadFull(fd int, buf []byte, off int64) error {
	for n := 0; n < len(buf); {
		m, err := unix.Pread(fd, buf[n:], off+int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case m == 0:
			return fmt.Errorf("read %d of %d bytes at offset %d: %w", n, len(buf), off, io.ErrUnexpectedEOF)
		}
		n += m
	}
	return nil
}
