package gpu

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrUnavailable is wrapped by Sample's error when there is no GPU to
// monitor at all (no driver, no device, no permission): a normal case for a
// CPU-only machine, which a view shows as one note and otherwise ignores.
var ErrUnavailable = errors.New("no GPU to monitor")

// ErrTimeout is wrapped by Sample's error when an NVML call did not return
// within Options.Timeout; sampling pauses until that call returns.
var ErrTimeout = errors.New("NVML call timed out")

// describe turns an NVML return code into a short phrase; it does not rely
// on the loaded library, so it works for mocks and after a driver failure.
func describe(r nvml.Return) string {
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "libnvidia-ml.so.1 not found"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA driver not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "insufficient permissions"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost (fell off the bus or stopped responding)"
	case nvml.ERROR_RESET_REQUIRED:
		return "GPU needs a reset"
	case nvml.ERROR_UNINITIALIZED:
		return "NVML not initialised"
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported on this device"
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return "not in this driver's NVML"
	case nvml.ERROR_TIMEOUT:
		return "driver timed out"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "NVML library and kernel driver versions differ (reboot or reload the driver)"
	case nvml.ERROR_INSUFFICIENT_SIZE:
		return "buffer too small"
	case nvml.ERROR_UNKNOWN:
		return "unknown NVML error"
	}
	return fmt.Sprintf("NVML error %d", int32(r))
}

// initStatus is the status line for a failed nvmlInit.
func initStatus(r nvml.Return) string {
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "no NVIDIA driver (libnvidia-ml.so.1 not found)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "no NVIDIA driver (kernel module not loaded)"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission to use the GPU (check access to /dev/nvidia*)"
	}
	return "NVML init failed: " + describe(r)
}

// fatalForDevice reports whether r means the device cannot answer any
// further query this sample.
func fatalForDevice(r nvml.Return) bool {
	switch r {
	case nvml.ERROR_GPU_IS_LOST, nvml.ERROR_RESET_REQUIRED, nvml.ERROR_UNINITIALIZED,
		nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return true
	}
	return false
}
