package pystack

import "fmt"

// Version is a CPython version; Micro is -1 when only 3.minor is known
// (3.10 has no Py_Version: its version comes from its file's name).
type Version struct {
	Major, Minor, Micro int
}

func (v Version) String() string {
	if v.Micro < 0 {
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Micro)
}

// versionFromHex is the version PY_VERSION_HEX (Py_Version, 3.11 on)
// gives: 0xMMmmuuLS.
func versionFromHex(h uint32) Version {
	return Version{Major: int(h >> 24), Minor: int(h >> 16 & 0xff), Micro: int(h >> 8 & 0xff)}
}

// supported reports whether the reader has a layout for v.
func supported(v Version) bool {
	_, ok := layouts[v.Minor]
	return v.Major == 3 && ok
}

// UnsupportedError is a Python process of a version the reader has no
// layout for.
type UnsupportedError struct {
	PID     int
	Version Version
	Why     string // what else rules it out ("a free-threaded build"); "" for none
}

func (e *UnsupportedError) Error() string {
	why := ""
	if e.Why != "" {
		why = ", " + e.Why + ","
	}
	return fmt.Sprintf("pid %d runs CPython %v%s which pipetop cannot read (it reads 3.10 to 3.13)", e.PID, e.Version, why)
}
