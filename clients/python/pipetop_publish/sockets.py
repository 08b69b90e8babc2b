"""Trainer sockets: where they live, their names and permissions, and the
peer check every connection passes (the same rules as the Go side)."""

from __future__ import annotations

import os
import socket
import struct
import tempfile
import time
from typing import Optional, Tuple

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def socket_dir() -> str:
    """Return the directory trainer sockets live in.

    ``$PIPETOP_SOCKET_DIR`` if set, else ``$XDG_RUNTIME_DIR/pipetop``, else
    ``/tmp/pipetop-UID``: the same rule as the Go side.
    """
    d = os.environ.get("PIPETOP_SOCKET_DIR")
    if d:
        return d
    d = os.environ.get("XDG_RUNTIME_DIR")
    if d:
        return os.path.join(d, "pipetop")
    return os.path.join("/tmp", "pipetop-%d" % os.getuid())


def socket_name(name: str, pid: int) -> str:
    """Return the file name ``NAME.PID.sock`` of a trainer's socket."""
    clean = "".join("_" if c in "/\0\n" else c for c in name) or "trainer"
    return "%s.%d.sock" % (clean, pid)


def ensure_dir(path: str) -> None:
    """Create the socket directory 0700, or check an existing one is ours and not writable by others."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as e:
        raise OSError(e.errno, "pipetop: create socket dir %s: %s" % (path, e.strerror)) from e
    if st.st_uid != os.geteuid():
        raise PermissionError(
            "pipetop: socket dir %s belongs to uid %d, not %d" % (path, st.st_uid, os.geteuid())
        )
    if st.st_mode & 0o022:
        # Others could replace our socket. Never chmod a directory we did not
        # make (it could be /tmp): say what is wrong instead.
        raise PermissionError(
            "pipetop: socket dir %s has mode %04o: others can write to it "
            "(chmod 700 %s, or choose another with PIPETOP_SOCKET_DIR)" % (path, st.st_mode & 0o777, path)
        )



def check_peer(peer_uid: int, peer_pid: int, my_uid: int) -> Optional[str]:
    """Return why a peer must be refused, or None when it is allowed.

    Only the trainer's own uid and root may attach.
    """
    if peer_uid == 0 or peer_uid == my_uid:
        return None
    return "permission denied: peer pid %d uid %d is neither uid %d nor root" % (
        peer_pid,
        peer_uid,
        my_uid,
    )


def peer_cred(sock: socket.socket) -> Tuple[int, int, int]:
    """Return (pid, uid, gid) of a connected Unix socket's peer."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid



def listen(path: str) -> socket.socket:
    """Listen on a new socket at path (0600, in a checked directory),
    non-blocking; a stale socket of our own pid there is replaced."""
    ensure_dir(os.path.dirname(path) or ".")
    try:
        os.unlink(path)  # a stale socket of our own pid
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
        # Listen at once: a viewer listing sockets treats one that
        # refuses connections as stale and removes it.
        sock.listen(16)
    except OSError as e:
        sock.close()
        raise OSError(e.errno, "pipetop: listen on %s: %s" % (path, e.strerror)) from e
    finally:
        os.umask(old)
    try:
        os.chmod(path, 0o600)  # the umask made it 0600 already
    except OSError:
        pass
    sock.setblocking(False)
    return sock


# A file in /dev/shm is swept only this long after it was made: with a
# /dev/shm shared across pid namespaces (docker --ipc=host), a pid we
# cannot see may be alive, and by then its workers have opened the file
# (a mapping or a bound socket outlives the name).
SWEEP_AGE_S = 600


def shm_dir() -> str:
    """Where the DataLoader instrumentation's files go (slot files, the
    workers' socket): /dev/shm, else the temporary directory."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def sweep_dead(base: str, prefix: str) -> None:
    """Remove the files in base named prefix + PID + anything whose process
    is gone and that are older than SWEEP_AGE_S (killed runs never remove
    theirs)."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    old = time.time() - SWEEP_AGE_S
    for name in names:
        if not name.startswith(prefix):
            continue
        digits = name[len(prefix):]
        digits = digits[:len(digits) - len(digits.lstrip("0123456789"))]
        if not digits or _alive(int(digits)):
            continue
        path = os.path.join(base, name)
        try:
            if os.stat(path).st_mtime < old:
                os.unlink(path)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    """Report whether process pid exists (in our pid namespace)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
