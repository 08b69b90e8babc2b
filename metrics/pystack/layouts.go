package pystack

// layouts is the table of offsets by CPython minor version, x86-64 and
// arm64 (LP64) builds with the GIL. Each entry is what
// testdata/offsets.c prints when compiled against that version's headers
// (3.10.13, 3.11.2 and 3.11.7, 3.12.1, 3.13.0: patch releases keep these
// structures); TestLayoutMatchesHeaders recompiles it wherever the
// headers are installed, and the live tests read a process of each
// version. On 3.13 the runtime's own _Py_DebugOffsets overrides the
// fields it covers (debugoffsets.go).
var layouts = map[int]layout{
	10: {
		minor:      10,
		interpHead: 32, runtimeGILLocked: 368, runtimeGILHolder: 360,
		interpNext: 0, interpThreads: 8, interpGIL: -1, gilLocked: -1, gilHolder: -1,
		threadSize: 280, threadNext: 8, threadID: 176, threadNativeID: -1, threadFrame: 24, cframeCurrent: -1,
		frameSize: 360, frameCode: 32, frameBack: 24, frameInstr: 96, frameOwner: -1,
		obType: 8, codeFilename: 104, codeName: 112, codeQualname: -1, codeFirstLine: 40,
		codeLineTable: 120, codeFirstTraceable: -1, codeCode: -1, codeUnits: -1,
		unicodeLength: 16, unicodeState: 32, unicodeASCIISize: 48, unicodeCompactSize: 72,
		bytesSize: 16, bytesData: 32,
	},
	11: {
		minor:      11,
		interpHead: 40, runtimeGILLocked: 376, runtimeGILHolder: 368,
		interpNext: 0, interpThreads: 16, interpGIL: -1, gilLocked: -1, gilHolder: -1,
		threadSize: 360, threadNext: 8, threadID: 152, threadNativeID: 160, threadFrame: 56, cframeCurrent: 8,
		frameSize: 72, frameCode: 32, frameBack: 48, frameInstr: 56, frameOwner: 69,
		obType: 8, codeFilename: 112, codeName: 120, codeQualname: 128, codeFirstLine: 72,
		codeLineTable: 136, codeFirstTraceable: 168, codeCode: 184, codeUnits: 16,
		unicodeLength: 16, unicodeState: 32, unicodeASCIISize: 48, unicodeCompactSize: 72,
		bytesSize: 16, bytesData: 32,
	},
	12: {
		minor:      12,
		interpHead: 40, runtimeGILLocked: -1, runtimeGILHolder: -1,
		interpNext: 0, interpThreads: 72, interpGIL: 384, gilLocked: 16, gilHolder: 8,
		threadSize: 288, threadNext: 8, threadID: 136, threadNativeID: 144, threadFrame: 56, cframeCurrent: 0,
		frameSize: 72, frameCode: 0, frameBack: 8, frameInstr: 56, frameOwner: 70,
		obType: 8, codeFilename: 112, codeName: 120, codeQualname: 128, codeFirstLine: 68,
		codeLineTable: 136, codeFirstTraceable: 176, codeCode: 192, codeUnits: 16,
		unicodeLength: 16, unicodeState: 32, unicodeASCIISize: 40, unicodeCompactSize: 56,
		bytesSize: 16, bytesData: 32,
	},
	13: {
		minor:      13,
		interpHead: 632, runtimeGILLocked: -1, runtimeGILHolder: -1,
		interpNext: 7264, interpThreads: 7344, interpGIL: 16, gilLocked: 16, gilHolder: 8,
		threadSize: 304, threadNext: 8, threadID: 152, threadNativeID: 160, threadFrame: 72, cframeCurrent: -1,
		frameSize: 72, frameCode: 0, frameBack: 8, frameInstr: 56, frameOwner: 70,
		obType: 8, codeFilename: 112, codeName: 120, codeQualname: 128, codeFirstLine: 68,
		codeLineTable: 136, codeFirstTraceable: 184, codeCode: 200, codeUnits: 16,
		unicodeLength: 16, unicodeState: 32, unicodeASCIISize: 40, unicodeCompactSize: 56,
		bytesSize: 16, bytesData: 32,
	},
}
