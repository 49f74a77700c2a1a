package nekte

import (
	"strconv"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// appendCompact writes the compact form of a JSON value (package doc, "JSON results").
func (r *Rules) appendCompact(dst []byte, n *node) []byte {
	switch n.kind {
	case 's':
		return jsonrpc.AppendString(dst, truncate(n.text, r.MaxString))
	case 'a':
		if n.collapsed {
			return jsonrpc.AppendString(dst, "["+plural(n.total, "item")+"]")
		}
		dst = append(dst, '[')
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = r.appendCompact(dst, &n.kids[i])
		}
		if more := n.total - len(n.kids); more > 0 {
			dst = append(dst, ',')
			dst = jsonrpc.AppendString(dst, "…(+"+plural(more, "item")+")")
		}
		return append(dst, ']')
	case 'o':
		if n.collapsed {
			return jsonrpc.AppendString(dst, "{"+plural(n.total, "member")+"}")
		}
		dst = append(dst, '{')
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonrpc.AppendString(dst, n.keys[i])
			dst = append(dst, ':')
			dst = r.appendCompact(dst, &n.kids[i])
		}
		if more := n.total - len(n.kids); more > 0 {
			dst = append(dst, `,"…":`...)
			dst = jsonrpc.AppendString(dst, "+"+plural(more, "member"))
		}
		return append(dst, '}')
	default:
		return append(dst, n.text...)
	}
}

// truncate keeps the first limit characters of s, and says how many it dropped:
// "abc…(+12 chars)".
func truncate(s string, limit int) string {
	total := utf8.RuneCountInString(s)
	if total <= limit {
		return s
	}
	cut := 0
	for range limit {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return s[:cut] + "…(+" + strconv.Itoa(total-limit) + " chars)"
}
