package jsonrpc

import (
	"strconv"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// AppendResult appends the success response {"jsonrpc":"2.0","result":...,"id":...} to
// dst. result is raw JSON written as is; an empty result is written as null.
func AppendResult(dst []byte, id ID, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","result":`...)
	if len(result) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, result...)
	}
	dst = append(dst, `,"id":`...)
	dst = append(dst, id.Raw()...)
	return append(dst, '}')
}

// AppendStreamMessage appends the notification that carries message seq (from 0) of the
// streamed result of request id:
//
//	{"jsonrpc":"2.0","method":"$/stream","params":{"id":<id>,"seq":<seq>,"value":<value>}}
func AppendStreamMessage(dst []byte, id ID, seq int, value []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"`+MethodStream+`","params":{"id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, `,"value":`...)
	if len(value) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, value...)
	}
	return append(dst, "}}"...)
}

// Methods of the gateway's streaming protocol. Method names beginning with "$/" belong to
// the gateway: they are handled by the face and never routed.
const (
	// MethodStream (server → client) carries one message of a streamed result.
	MethodStream = "$/stream"
	// MethodStreamSend (client → server) sends a message to a client-streaming call:
	// params {id, value}.
	MethodStreamSend = "$/stream/send"
	// MethodStreamEnd (client → server) ends a client-streaming call's input: params {id}.
	MethodStreamEnd = "$/stream/end"
	// MethodCancelRequest (client → server) cancels a request in flight: params {id}.
	MethodCancelRequest = "$/cancelRequest"
)

// AppendError appends the error response
// {"jsonrpc":"2.0","error":{"code":...,"message":...,"data":...},"id":...} to dst. data is
// raw JSON written as is, and the data member is left out when data is nil.
func AppendError(dst []byte, id ID, code schemas.Code, message string, data []byte) []byte {
	dst = appendErrorHead(dst, code, message)
	if data != nil {
		dst = append(dst, `,"data":`...)
		dst = append(dst, data...)
	}
	return appendErrorTail(dst, id)
}

// appendErrorHead appends an error response up to the end of error.message.
func appendErrorHead(dst []byte, code schemas.Code, message string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	return AppendString(dst, message)
}

// appendErrorTail closes the error object and appends the id.
func appendErrorTail(dst []byte, id ID) []byte {
	dst = append(dst, `},"id":`...)
	dst = append(dst, id.Raw()...)
	return append(dst, '}')
}

// hexDigits are the digits of \u escapes, lowercase as encoding/json writes them.
const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string literal, escaped as encoding/json does
// without HTML escaping: quote, backslash and control characters are escaped (using \b, \f,
// \n, \r and \t where they exist), U+2028 and U+2029 are escaped, and each byte of invalid
// UTF-8 becomes \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		n := 1
		var esc string
		if c >= utf8.RuneSelf {
			var r rune
			r, n = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				esc = `\ufffd`
			case r == '\u2028':
				esc = `\u2028`
			case r == '\u2029':
				esc = `\u2029`
			default:
				i += n
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		if esc != "" {
			dst = append(dst, esc...)
		} else {
			dst = appendEscapedASCII(dst, c)
		}
		i += n
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendEscapedASCII appends the escape of c, a quote, a backslash or a control character.
func appendEscapedASCII(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
