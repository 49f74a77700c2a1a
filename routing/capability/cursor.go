package capability

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// cursor is where a listing continues: the catalog version and the filter it was made
// for (filterKey, followed by the fingerprint of the caller's view when it hides
// anything), and the offset of the next capability. On the wire it is opaque: base64url
// of "c1|<version>|<filter>|<offset>".
type cursor struct {
	version, filter string
	offset          int
}

const cursorTag = "c1"

var errCursor = errors.New("malformed cursor")

func (c cursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorTag + "|" + c.version + "|" + c.filter + "|" + strconv.Itoa(c.offset)))
}

// decodeCursor reads a cursor written by encode, and nothing else: every part must be
// there, hex where hex is written, and the offset a canonical non-negative decimal.
func decodeCursor(s string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errCursor
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 4 || parts[0] != cursorTag || !isHex(parts[1]) || !isHex(parts[2]) {
		return cursor{}, errCursor
	}
	off, err := strconv.Atoi(parts[3])
	if err != nil || off < 0 || strconv.Itoa(off) != parts[3] {
		return cursor{}, errCursor
	}
	return cursor{version: parts[1], filter: parts[2], offset: off}, nil
}

func isHex(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
