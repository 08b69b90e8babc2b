package monitor

import (
	"context"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchDir returns a channel that receives when an entry is added to,
// removed from or renamed in dir, through inotify, until ctx ends. A run's
// view waits on it to look for new ranks, where a ticker woke it every
// second to stat the directory: each wake-up costs as much as a small
// refresh, and the stat, a system call the Go scheduler hears of, set its
// monitor thread polling every 20 µs for the next millisecond. The
// channel is closed when the watch ends: ctx done, or dir itself removed
// or moved (the caller then looks on its own again).
func watchDir(ctx context.Context, dir string) (<-chan struct{}, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), "inotify "+dir) // non-blocking: read through the runtime's poller
	stop := context.AfterFunc(ctx, func() { f.Close() })
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		defer stop()
		defer f.Close()
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default: // a change is already waiting to be looked at
			}
			if selfGone(buf[:n]) {
				return
			}
		}
	}()
	return ch, nil
}

// selfGone reports whether the inotify events in b say the watched
// directory itself went away (removed, moved, or its watch dropped).
func selfGone(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
			return true
		}
		b = b[min(len(b), unix.SizeofInotifyEvent+int(ev.Len)):]
	}
	return false
}
