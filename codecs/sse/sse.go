// Package sse writes Server-Sent Events frames (the text/event-stream format of the HTML
// Living Standard): "event: <name>\n" when a name is given, one "data: " line per line of
// the payload, and a blank line. Lines end with "\n" only: strict clients such as the NEKTE
// reference split events on "\n\n" and break on CRLF.
//
// It imports nothing of Gatehouse.
package sse

import "strings"

// ContentType is the media type of an event stream.
const ContentType = "text/event-stream"

// AppendEvent appends one event frame. A payload spanning several lines (split at "\n",
// "\r\n" or a lone "\r", as event-stream parsers do) becomes several data lines, which a
// client joins back with "\n". An empty name writes no event line (the client's default,
// "message"); name must not contain a line break.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			dst = append(dst, "\ndata: "...)
		case '\n':
			dst = append(dst, "\ndata: "...)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, "\n\n"...)
}

// Accepts reports whether an Accept header value admits an event stream.
func Accepts(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), ContentType) {
			return true
		}
	}
	return false
}
