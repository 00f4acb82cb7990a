package client

import "encoding/binary"

// MarkerLen is the size of the latency marker at the start of every rate
// message, as tcpkali's --latency-marker but binary and verified: bytes
// 0–7 are the message's number on its connection, bytes 8–15 its scheduled
// send time in nanoseconds since the start of the phase, both
// little-endian. A rate payload must be at least this long.
const MarkerLen = 16

// PutMarker writes a marker into b[:MarkerLen].
func PutMarker(b []byte, seq uint64, at int64) {
	_ = b[MarkerLen-1]
	binary.LittleEndian.PutUint64(b[0:], seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(at))
}

// ReadMarker reads the marker in b[:MarkerLen].
func ReadMarker(b []byte) (seq uint64, at int64) {
	_ = b[MarkerLen-1]
	return binary.LittleEndian.Uint64(b[0:]), int64(binary.LittleEndian.Uint64(b[8:]))
}
