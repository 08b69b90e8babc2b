package stage

import "strconv"

// VideoStream is one video stream a Python loader decoded (counted by the
// automatic instrumentation of PyAV in the processes that decode it): what
// it is, and its counters and its file's since the run began.
type VideoStream struct {
	// File is the video file's absolute path (PyAV's name for a file
	// object, such as "<none>").
	File string `json:"file"`
	// Stream is the stream's index in the file.
	Stream int `json:"stream"`
	// Codec is the decoder's name (h264, av1, ...).
	Codec string `json:"codec"`
	// Width and Height are the decoded frames' size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Rate is the stream's average frame rate (frames a second); Frames
	// the frames its container says it has (0 when unknown).
	Rate   float64 `json:"rate"`
	Frames int64   `json:"frames"`
	// GOP is the keyframe interval in frames: the median distance between
	// adjacent keyframes seen while decoding (0 until two were seen);
	// Keyframes counts the keyframes seen.
	GOP       int `json:"gop"`
	Keyframes int `json:"keyframes"`
	// Opens counts av.open calls on the file, Calls the packet iterations
	// started on it (one per container.decode or demux: a read), Seeks its
	// seeks; the three are the file's, whatever the stream.
	Opens int64 `json:"opens"`
	Calls int64 `json:"calls"`
	Seeks int64 `json:"seeks"`
	// TorchvisionOpens are the opens torchvision's own code made (its
	// read_video opens the file on every call).
	TorchvisionOpens int64 `json:"torchvision_opens,omitempty"`
	// FramesDecoded counts the frames the stream's decoder output;
	// FramesReturned those the user's code converted to pixels
	// (to_ndarray, to_image, to_rgb, reformat), each frame once.
	FramesDecoded  int64 `json:"frames_decoded"`
	FramesReturned int64 `json:"frames_returned"`
	// BytesRead is the packets the file's video streams decoded;
	// BytesDecoded the decoded frames at their decoded size in the pixel
	// format they are converted to; BytesUsed what the conversions
	// returned.
	BytesRead    int64 `json:"bytes_read"`
	BytesDecoded int64 `json:"bytes_decoded"`
	BytesUsed    int64 `json:"bytes_used"`
	// DecodeNs is the time decoding, ConvertNs the time converting frames
	// to pixels (the pixel-format conversion), ReadNs the time opening
	// and seeking the file.
	DecodeNs  int64 `json:"decode_ns"`
	ConvertNs int64 `json:"convert_ns"`
	ReadNs    int64 `json:"read_ns"`
	// ReadAmp is FramesDecoded / FramesReturned: the stream's read
	// amplification (0 when no frame was returned).
	ReadAmp float64 `json:"read_amp"`
}

// OpensPerCall is how often a read opened the file (1 when it is opened
// for every read); 0 when unknown.
func (v *VideoStream) OpensPerCall() float64 {
	if v.Calls == 0 {
		return 0
	}
	return float64(v.Opens) / float64(v.Calls)
}

// TimeNs is the time the stream's reads took: opening, seeking and
// reading, decoding and converting.
func (v *VideoStream) TimeNs() int64 { return v.ReadNs + v.DecodeNs + v.ConvertNs }

// Name is the stream as the advice names it: its file, with the stream's
// index when it is not the first.
func (v *VideoStream) Name() string {
	name := v.File
	if name == "" {
		name = "a video"
	}
	if v.Stream > 0 {
		return name + " stream " + strconv.Itoa(v.Stream)
	}
	return name
}
