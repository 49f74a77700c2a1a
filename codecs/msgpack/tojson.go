package msgpack

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// ToJSON transcodes one MessagePack document to compact JSON text (see the package doc).
// Every error is an *Error.
func ToJSON(src []byte, lim Limits) ([]byte, error) {
	lim = lim.withDefaults()
	if len(src) > lim.MaxBytes {
		return nil, &Error{Reason: "document too large", Limit: LimitBytes, Max: lim.MaxBytes}
	}
	r := reader{src: src, lim: lim, out: make([]byte, 0, len(src)+len(src)/2+16)}
	if err := r.value(0); err != nil {
		return nil, err
	}
	if r.pos != len(src) {
		return nil, r.fail("unexpected data after the value")
	}
	return r.out, nil
}

// reader walks a MessagePack document and writes its JSON.
type reader struct {
	src  []byte
	pos  int
	head int // where the value being read starts
	lim  Limits
	out  []byte
}

func (r *reader) fail(reason string) *Error { return &Error{Offset: r.pos, Reason: reason} }

// take returns the next n bytes.
func (r *reader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.src)-r.pos {
		return nil, r.fail("unexpected end of data")
	}
	b := r.src[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// length reads a big-endian length of size bytes.
func (r *reader) length(size int) (int, error) {
	b, err := r.take(size)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return int(b[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(b)), nil
	default:
		return int(binary.BigEndian.Uint32(b)), nil
	}
}

func (r *reader) value(depth int) error {
	if r.pos >= len(r.src) {
		return r.fail("unexpected end of data")
	}
	c := r.src[r.pos]
	r.head = r.pos
	r.pos++
	switch {
	case c <= 0x7f: // positive fixint
		r.out = strconv.AppendUint(r.out, uint64(c), 10)
		return nil
	case c >= 0xe0: // negative fixint
		r.out = strconv.AppendInt(r.out, signExtend(uint64(c), 1), 10)
		return nil
	case c <= 0x8f:
		return r.object(int(c&0x0f), depth)
	case c <= 0x9f:
		return r.array(int(c&0x0f), depth)
	case c <= 0xbf:
		return r.str(int(c & 0x1f))
	}
	return r.tagged(c, depth)
}

// tagged handles the formats 0xc0 … 0xdf.
func (r *reader) tagged(c byte, depth int) error {
	switch c {
	case 0xc0:
		r.out = append(r.out, "null"...)
	case 0xc2:
		r.out = append(r.out, "false"...)
	case 0xc3:
		r.out = append(r.out, "true"...)
	case 0xc4, 0xc5, 0xc6:
		return r.sized(1<<(c-0xc4), r.bin)
	case 0xc7, 0xc8, 0xc9:
		n, err := r.length(1 << (c - 0xc7))
		if err != nil {
			return err
		}
		return r.ext(n)
	case 0xca, 0xcb:
		return r.float(c == 0xca)
	case 0xcc, 0xcd, 0xce, 0xcf:
		return r.integer(1<<(c-0xcc), false)
	case 0xd0, 0xd1, 0xd2, 0xd3:
		return r.integer(1<<(c-0xd0), true)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return r.ext(1 << (c - 0xd4))
	case 0xd9, 0xda, 0xdb:
		return r.sized(1<<(c-0xd9), r.str)
	case 0xdc, 0xdd:
		return r.sized(2<<(c-0xdc), func(n int) error { return r.array(n, depth) })
	case 0xde, 0xdf:
		return r.sized(2<<(c-0xde), func(n int) error { return r.object(n, depth) })
	default: // 0xc1
		r.pos--
		return r.fail("byte 0xc1 is never used")
	}
	return nil
}

// sized reads a length of size bytes and passes it on.
func (r *reader) sized(size int, next func(int) error) error {
	n, err := r.length(size)
	if err != nil {
		return err
	}
	return next(n)
}

func (r *reader) integer(size int, signed bool) error {
	b, err := r.take(size)
	if err != nil {
		return err
	}
	var u uint64
	for _, x := range b {
		u = u<<8 | uint64(x)
	}
	if signed {
		r.out = strconv.AppendInt(r.out, signExtend(u, size), 10)
	} else {
		r.out = strconv.AppendUint(r.out, u, 10)
	}
	return nil
}

func (r *reader) float(single bool) error {
	start := r.pos - 1
	var (
		f       float64
		bitSize = 64
	)
	if single {
		b, err := r.take(4)
		if err != nil {
			return err
		}
		f, bitSize = float64(math.Float32frombits(binary.BigEndian.Uint32(b))), 32
	} else {
		b, err := r.take(8)
		if err != nil {
			return err
		}
		f = math.Float64frombits(binary.BigEndian.Uint64(b))
	}
	var ok bool
	if r.out, ok = appendFloat(r.out, f, bitSize); !ok {
		return &Error{Offset: start, Reason: "NaN and infinities have no JSON form"}
	}
	return nil
}

// checkString checks a str or bin of n bytes against the limit.
func (r *reader) checkString(n int) error {
	if n > r.lim.MaxStringBytes {
		return &Error{Offset: r.pos, Reason: "string too long", Limit: LimitStringBytes, Max: r.lim.MaxStringBytes}
	}
	return nil
}

func (r *reader) str(n int) error {
	if err := r.checkString(n); err != nil {
		return err
	}
	start := r.pos
	b, err := r.take(n)
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return &Error{Offset: start, Reason: "string is not valid UTF-8"}
	}
	r.out = appendString(r.out, b)
	return nil
}

// appendString writes valid UTF-8 b as a JSON string, escaped as jsonrpc.AppendString
// escapes it; text that needs no escape is copied without conversion.
func appendString(dst, b []byte) []byte {
	for i, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || (c == 0xe2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xa8 || b[i+2] == 0xa9)) {
			return jsonrpc.AppendString(dst, string(b))
		}
	}
	dst = append(dst, '"')
	dst = append(dst, b...)
	return append(dst, '"')
}

func (r *reader) bin(n int) error {
	if err := r.checkString(n); err != nil {
		return err
	}
	b, err := r.take(n)
	if err != nil {
		return err
	}
	r.out = append(r.out, '"')
	r.out = base64.StdEncoding.AppendEncode(r.out, b)
	r.out = append(r.out, '"')
	return nil
}

// timestampType is the extension type of MessagePack timestamps.
const timestampType = -1

// ext reads an extension of n data bytes (after its type byte): only timestamps have a
// JSON form.
func (r *reader) ext(n int) error {
	start := r.pos
	typ, err := r.take(1)
	if err != nil {
		return err
	}
	b, err := r.take(n)
	if err != nil {
		return err
	}
	if typ := signExtend(uint64(typ[0]), 1); typ != timestampType {
		return &Error{Offset: start, Reason: "extension type " + strconv.FormatInt(typ, 10) + " has no JSON form"}
	}
	t, ok := timestamp(b)
	if !ok || t.Year() < 1 || t.Year() > 9999 {
		return &Error{Offset: start, Reason: "invalid or out-of-range timestamp"}
	}
	r.out = append(r.out, '"')
	r.out = t.AppendFormat(r.out, time.RFC3339Nano)
	r.out = append(r.out, '"')
	return nil
}

// timestamp decodes the data of a timestamp extension: 32-bit seconds, 30-bit
// nanoseconds with 34-bit seconds, or 32-bit nanoseconds with 64-bit signed seconds.
func timestamp(b []byte) (time.Time, bool) {
	var sec, nsec int64
	switch len(b) {
	case 4:
		sec = int64(binary.BigEndian.Uint32(b))
	case 8:
		v := binary.BigEndian.Uint64(b)
		nsec, sec = signed(v>>34), signed(v&(1<<34-1))
	case 12:
		nsec, sec = int64(binary.BigEndian.Uint32(b)), signed(binary.BigEndian.Uint64(b[4:]))
	default:
		return time.Time{}, false
	}
	if nsec >= 1e9 {
		return time.Time{}, false
	}
	return time.Unix(sec, nsec).UTC(), true
}

// enter checks the depth limit (reporting the container's first byte) and that n
// elements of at least perElem bytes each can follow.
func (r *reader) enter(n, perElem, depth int) error {
	if depth+1 > r.lim.MaxDepth {
		return &Error{Offset: r.head, Reason: "nesting too deep", Limit: LimitDepth, Max: r.lim.MaxDepth}
	}
	if n > (len(r.src)-r.pos)/perElem {
		return r.fail("unexpected end of data")
	}
	return nil
}

func (r *reader) array(n, depth int) error {
	if err := r.enter(n, 1, depth); err != nil {
		return err
	}
	r.out = append(r.out, '[')
	for i := range n {
		if i > 0 {
			r.out = append(r.out, ',')
		}
		if err := r.value(depth + 1); err != nil {
			return err
		}
	}
	r.out = append(r.out, ']')
	return nil
}

func (r *reader) object(n, depth int) error {
	if err := r.enter(n, 2, depth); err != nil {
		return err
	}
	r.out = append(r.out, '{')
	for i := range n {
		if i > 0 {
			r.out = append(r.out, ',')
		}
		if err := r.key(); err != nil {
			return err
		}
		r.out = append(r.out, ':')
		if err := r.value(depth + 1); err != nil {
			return err
		}
	}
	r.out = append(r.out, '}')
	return nil
}

// key reads a map key, which must be a str.
func (r *reader) key() error {
	if r.pos >= len(r.src) {
		return r.fail("unexpected end of data")
	}
	c := r.src[r.pos]
	switch {
	case c >= 0xa0 && c <= 0xbf:
		r.pos++
		return r.str(int(c & 0x1f))
	case c >= 0xd9 && c <= 0xdb:
		r.pos++
		return r.sized(1<<(c-0xd9), r.str)
	default:
		return r.fail("map key is not a string")
	}
}
