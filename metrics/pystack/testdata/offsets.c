/* offsets.c prints, for the CPython whose headers it is compiled against,
   the offsets and sizes the reader's layout table holds, one "key value"
   line each. TestLayoutMatchesHeaders compiles it against every installed
   CPython's headers (Py_BUILD_CORE, for the internal ones) and compares
   its lines with the table's entry for that version. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif

#define P(key, value) printf("%s %ld\n", key, (long)(value))

int main(void) {
    P("version", PY_VERSION_HEX >> 16);
    P("runtime.interp_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030C0000
    P("runtime.gil_locked", offsetof(_PyRuntimeState, ceval.gil.locked));
    P("runtime.gil_holder", offsetof(_PyRuntimeState, ceval.gil.last_holder));
#else
    P("interp.gil", offsetof(PyInterpreterState, ceval.gil));
    P("gil.locked", offsetof(struct _gil_runtime_state, locked));
    P("gil.holder", offsetof(struct _gil_runtime_state, last_holder));
#endif
    P("interp.next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX < 0x030B0000
    P("interp.threads_head", offsetof(PyInterpreterState, tstate_head));
#else
    P("interp.threads_head", offsetof(PyInterpreterState, threads.head));
#endif
    P("thread.size", sizeof(PyThreadState));
    P("thread.next", offsetof(PyThreadState, next));
    P("thread.thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX < 0x030B0000
    P("thread.frame", offsetof(PyThreadState, frame));
#elif PY_VERSION_HEX < 0x030D0000
    P("thread.frame", offsetof(PyThreadState, cframe));
    P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
#else
    P("thread.frame", offsetof(PyThreadState, current_frame));
#endif
#if PY_VERSION_HEX >= 0x030B0000
    P("thread.native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX < 0x030B0000
    P("frame.size", sizeof(PyFrameObject));
    P("frame.code", offsetof(PyFrameObject, f_code));
    P("frame.back", offsetof(PyFrameObject, f_back));
    P("frame.instr", offsetof(PyFrameObject, f_lasti));
#else
    P("frame.size", offsetof(_PyInterpreterFrame, localsplus));
    P("frame.back", offsetof(_PyInterpreterFrame, previous));
    P("frame.owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030D0000
    P("frame.code", offsetof(_PyInterpreterFrame, f_code));
    P("frame.instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
    P("frame.code", offsetof(_PyInterpreterFrame, f_executable));
    P("frame.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
#endif
    P("object.type", offsetof(PyObject, ob_type));
    P("code.filename", offsetof(PyCodeObject, co_filename));
    P("code.name", offsetof(PyCodeObject, co_name));
    P("code.first_line", offsetof(PyCodeObject, co_firstlineno));
    P("code.line_table", offsetof(PyCodeObject, co_linetable));
#if PY_VERSION_HEX >= 0x030B0000
    P("code.qualname", offsetof(PyCodeObject, co_qualname));
    P("code.first_traceable", offsetof(PyCodeObject, _co_firsttraceable));
    P("code.code", offsetof(PyCodeObject, co_code_adaptive));
    P("code.units", offsetof(PyVarObject, ob_size));
#endif
    P("unicode.length", offsetof(PyASCIIObject, length));
    P("unicode.state", offsetof(PyASCIIObject, state));
    P("unicode.ascii_size", sizeof(PyASCIIObject));
    P("unicode.compact_size", sizeof(PyCompactUnicodeObject));
    P("bytes.size", offsetof(PyVarObject, ob_size));
    P("bytes.data", offsetof(PyBytesObject, ob_sval));
    return 0;
}
