// Package opkey holds the order-preserving encodings both operators'
// store keys are built from, so a window's timers and an assembly's
// deadlines sort the same way in any store.
package opkey

import "encoding/binary"

// AppendTime appends t big-endian with the sign bit flipped, so the
// bytes of two times compare as the times do (negatives first).
func AppendTime(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

// ReadTime reads a time AppendTime wrote and returns the rest; false when
// fewer than eight bytes are left.
func ReadTime(b []byte) (int64, []byte, bool) {
	if len(b) < 8 {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), b[8:], true
}
