package semantic

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Gen expands classes of hostile input into concrete values from a seeded source, so
// that a run is replayed by its seed. Each method returns JSON text (or, for headers and
// names, raw text) of one class; the caller knows what the gateway must answer to it.
type Gen struct {
	R *rand.Rand
}

// pick returns one of xs.
func pick[T any](g Gen, xs []T) T { return xs[g.R.IntN(len(xs))] }

// ValidIDs are JSON-RPC ids the envelope accepts: strings, numbers of every shape
// (zero, negative, past 2^53, the largest double, fractions, exponents) and null.
var ValidIDs = []string{
	`0`, `-1`, `1`, `9007199254740993`, `-9007199254740993`, `1e308`, `-1e308`, `1.5`, `-0`, `0.0`, //nolint:goconst // JSON texts
	`123456789012345678901234567890`, `1E+2`, `5e-324`, `""`, `"0"`, `"-1"`, `"id"`, `null`,
}

// InvalidIDs are ids of the JSON types the envelope refuses: booleans, objects, arrays.
var InvalidIDs = []string{`true`, `false`, `{}`, `{"a":1}`, `[]`, `[1]`, `[null]`, `{"id":1}`} //nolint:goconst // JSON texts

// ValidID is one valid id, sometimes a string of random hostile content of at most limit
// bytes between its quotes.
func (g Gen) ValidID(limit int) string {
	if g.R.IntN(3) == 0 {
		return `"` + g.Content(limit) + `"`
	}
	return pick(g, ValidIDs)
}

// InvalidID is one id of a refused type.
func (g Gen) InvalidID() string { return pick(g, InvalidIDs) }

// hostile are pieces of JSON string content (escaped where JSON requires it): lone and
// reversed surrogates, NUL and other controls, bidi overrides, zero-width characters,
// byte order marks, non-characters, the largest code point, and injection characters.
var hostile = []string{
	`\ud800`, `\udfff`, `\udc00\ud800`, `\ud800\u0041`, `\u0000`, `\u0001`, `\u001f`, `\u007f`,
	`\u202e`, "\u202e", `\u202d`, `\u2066`, `\u200b`, "\u200d", `\ufeff`, "\ufeff",
	`\ufffe`, `\uffff`, `\ufdd0`, "\U0010ffff", "\U0001f600", `\ud83d\ude00`, `\u2028`, `\u2029`,
	`../`, `..\\`, `%00`, `%2e%2e%2f`, `;`, `\"`, `'`, "`", `\r\n`, `\n`, `\t`, `{{`, `}}`, `$(`, `${`, `<script>`, `&`, `|`, `*`, `?`,
	`a`, `b`, `0`, `.`, `/`, `\\`, `\/`, `é`, `日本`,
}

// Content is JSON string content (without quotes) of at most limit raw bytes, made of
// hostile pieces.
func (g Gen) Content(limit int) string {
	var b strings.Builder
	n := 1 + g.R.IntN(8)
	for range n {
		p := pick(g, hostile)
		if b.Len()+len(p) > limit {
			break
		}
		b.WriteString(p)
	}
	return b.String()
}

// Padded is JSON string content of exactly n raw bytes: hostile pieces, then ASCII.
func (g Gen) Padded(n int) string {
	s := g.Content(n)
	return s + strings.Repeat("x", n-len(s))
}

// Overlong is raw text holding a byte sequence that is not UTF-8: an overlong encoding
// ("/" as two and three bytes, NUL as two), a CESU-8 surrogate, a stray continuation byte
// or a truncated sequence.
func (g Gen) Overlong() string {
	return pick(g, []string{"\xc0\xaf", "\xe0\x80\xaf", "\xc0\x80", "\xed\xa0\x80", "\x80", "\xff", "\xe2\x82", "\xf8\x88\x80\x80\x80"})
}

// injection are method and tool name parts with characters of path traversal, NUL,
// command and template injection, quoting and header splitting.
var injection = []string{
	`../`, `../../etc/passwd`, `%00`, `\u0000`, `;`, `;rm -rf /`, `\"`, `'`, `' OR '1'='1`, `\r\n`, `\r\nX-Injected: 1`,
	`{{.}}`, `{{`, `$(id)`, `${HOME}`, "`id`", `|`, `&&`, `<`, `>`, `*`, `?`, `#`, `%2F`, `\\`, `/`, ` `, `\u202e`, `\u200b`,
}

// Injected is a method or tool name (JSON string content) that starts like base and
// carries injection characters.
func (g Gen) Injected(base string) string {
	var b strings.Builder
	if g.R.IntN(2) == 0 {
		b.WriteString(base)
	}
	for range 1 + g.R.IntN(3) {
		b.WriteString(pick(g, injection))
		if g.R.IntN(2) == 0 {
			b.WriteString(base)
		}
	}
	return b.String()
}

// HeaderInjected is a header-safe rendering of an injected name (no CR, LF or NUL,
// which an HTTP client refuses to send): what a hostile caller can put in a header.
func (g Gen) HeaderInjected(base string) string {
	s := g.Injected(base)
	return strings.NewReplacer(`\r`, "", `\n`, "", `\u0000`, "", `\u202e`, "\u202e", `\u200b`, "\u200b", `\"`, `"`, `\\`, `\`).Replace(s)
}

// Deadline classes: the caller's deadline (epoch milliseconds) as it is refused or kept.
const (
	DeadlineMalformed = "malformed" // not a positive integer ≤ 2^53
	DeadlinePast      = "past"      // a valid number already past (1, a second ago)
	DeadlineFar       = "far"       // far in the future: lowered to deadline.max
)

// malformedDeadlines are JSON values no deadline may take; header values add text that is
// not JSON.
var malformedDeadlines = []string{`-1`, `0`, `-0`, `-9007199254740993`, `9007199254740993`, `1e308`, `1.5`, `-0.5`,
	`18446744073709551616`, `"1"`, `""`, `null`, `true`, `[]`, `{}`, `[1]`}

// Deadline is a deadline_ms value of class (JSON text), relative to now (epoch
// milliseconds).
func (g Gen) Deadline(class string, now int64) string {
	switch class {
	case DeadlineMalformed:
		return pick(g, malformedDeadlines)
	case DeadlinePast:
		return pick(g, []string{`1`, `2`, strconv.FormatInt(now-1000, 10), strconv.FormatInt(now-g.R.Int64N(1e9), 10)})
	default:
		return pick(g, []string{`9007199254740992`, `9007199254740000`, strconv.FormatInt(now+24*3600*1000, 10), strconv.FormatInt(now+1e12, 10)})
	}
}

// DeadlineHeader is an X-Deadline-Ms value of class. The header takes any integer
// from 1 to 2^63-1 (a later one is lowered to deadline.max like any far deadline),
// where deadline_ms stops at 2^53: 2^53+1 is far there, not malformed.
func (g Gen) DeadlineHeader(class string, now int64) string {
	if class == DeadlineMalformed && g.R.IntN(2) == 0 {
		return pick(g, []string{`0x10`, `abc`, `1e3`, `1_000`, `١٢`, `9999999999999999999999`, `1,2`})
	}
	if class == DeadlineFar && g.R.IntN(4) == 0 {
		return pick(g, []string{`9007199254740993`, `9223372036854775807`})
	}
	for {
		if v := g.Deadline(class, now); v != `9007199254740993` {
			return v
		}
	}
}

// Budget is a NEKTE max_tokens value and whether the gateway must take it: zero and
// ordinary counts are taken; negative, huge, fractional and other types are refused.
func (g Gen) Budget() (string, bool) {
	if g.R.IntN(3) == 0 {
		return pick(g, []string{`0`, `1`, `100000`}), true
	}
	return pick(g, []string{`-1`, `-9223372036854775808`, `9223372036854775808`, `1e308`, `-1e308`, `1.5`, `"100"`, `true`, `[]`, `{}`}), false
}

// HeaderPad is n bytes of a header value: visible ASCII, including the characters of
// injection a header may carry.
func (g Gen) HeaderPad(n int) string {
	const chars = "abcxyz0189 ;'\"{}$()<>|&*?#%/.\\-_=+~`!@^[],:"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[g.R.IntN(len(chars))]
	}
	if n > 0 {
		b[0], b[n-1] = 'a', 'z' // no leading or trailing space
	}
	return string(b)
}
