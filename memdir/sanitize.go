package memdir

import (
	"strconv"
	"unicode/utf16"
)

// maxSanitizedLength is the length, in UTF-16 code units, beyond which
// SanitizePath shortens its result and appends a hash.
const maxSanitizedLength = 200

// SanitizePath turns a path into the single directory name Claude Code uses
// under projects/. Every UTF-16 code unit outside [A-Za-z0-9] becomes '-'
// (so a character outside the Basic Multilingual Plane becomes "--"). A
// result longer than 200 units is cut to 200 and followed by '-' and the
// base-36 absolute value of a 32-bit string hash of the original path, so
// two long paths with a common prefix still get distinct names.
//
//	SanitizePath("/home/u/proj") == "-home-u-proj"
func SanitizePath(p string) string {
	units := utf16.Encode([]rune(p))
	out := make([]byte, len(units))
	for i, c := range units {
		if c < 128 && isASCIIAlnum(byte(c)) {
			out[i] = byte(c)
		} else {
			out[i] = '-'
		}
	}
	if len(out) <= maxSanitizedLength {
		return string(out)
	}
	return string(out[:maxSanitizedLength]) + "-" + javaStringHash36(units)
}

// javaStringHash36 is h = h*31 + c over the UTF-16 units with int32
// wrap-around, rendered as the base-36 absolute value.
func javaStringHash36(units []uint16) string {
	var h int32
	for _, c := range units {
		h = h*31 + int32(c)
	}
	return base36Abs(h)
}

// base36Abs renders |h| in base 36; |MinInt32| is 2147483648.
func base36Abs(h int32) string {
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return strconv.FormatInt(abs, 36)
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
