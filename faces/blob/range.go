package blobface

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// requestedRange returns the bytes [off, off+n) a GET asks for: its Range header (RFC 9110
// §14.1.2, one range only) or, without one, the whole grant. The range must lie within the
// grant and within the object of size bytes.
func requestedRange(header string, g blob.Grant, size int64) (off, n int64, err error) {
	grantEnd := g.Offset + g.Length
	if grantEnd > size {
		return 0, 0, errors.New("the grant reaches past the object")
	}
	if header == "" {
		return g.Offset, g.Length, nil
	}
	spec, ok := strings.CutPrefix(header, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, errors.New("want one range, bytes=first-last")
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, errors.New("want one range, bytes=first-last")
	}
	switch first {
	case "": // suffix: the last n bytes of the object
		k, err := parseOffset(last)
		if err != nil || k == 0 {
			return 0, 0, errors.New("malformed suffix range")
		}
		off, n = max(size-k, 0), min(k, size)
	default:
		a, err := parseOffset(first)
		if err != nil {
			return 0, 0, errors.New("malformed range")
		}
		b := size - 1
		if last != "" {
			if b, err = parseOffset(last); err != nil || b < a {
				return 0, 0, errors.New("malformed range")
			}
		}
		if a >= size {
			return 0, 0, errors.New("the range starts past the object")
		}
		off, n = a, min(b, size-1)-a+1
	}
	if off < g.Offset || off+n > grantEnd {
		return 0, 0, errors.New("the range is outside the granted bytes")
	}
	return off, n, nil
}

// parseOffset parses a byte position: decimal digits only (no sign, no space).
func parseOffset(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a byte position")
	}
	return strconv.ParseInt(s, 10, 64)
}
