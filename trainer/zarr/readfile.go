package zarr

import (
	"fmt"
	"io"
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

// readFile reads the whole chunk file key into buf[:0] (grown if needed)
// with plain system calls: openat, fstat, read, close. os.Open would also
// register every chunk file with the network poller, which a loader
// opening tens of thousands of files a second pays for in system time.
func (d *dirHandle) readFile(key string, buf []byte) ([]byte, error) {
	open := func() (int, error) {
		if d.fd >= 0 {
			return unix.Openat(d.fd, key, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		return unix.Open(d.path+"/"+key, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	fd, err := open()
	for err == unix.EINTR {
		fd, err = open()
	}
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
