package nekte

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// Rules are the limits of the compact and minimal representations (see the package doc).
// A zero field takes its value from DefaultRules.
type Rules struct {
	// MaxString is how many characters of a string compact keeps.
	MaxString int
	// MaxText is how many characters of MCP text content compact keeps, across all items.
	MaxText int
	// MaxItems is how many array items (and MCP content items) compact keeps.
	MaxItems int
	// MaxMembers is how many members of an object compact keeps.
	MaxMembers int
	// MaxDepth is how deep compact keeps nested arrays and objects; the top value is at
	// depth 0, and a container at MaxDepth is replaced by a count.
	MaxDepth int
	// MinimalTokens caps the minimal line, in tokens of its JSON string.
	MinimalTokens int
}

// DefaultRules are the rules JSONLevels and MCPLevels apply.
var DefaultRules = Rules{
	MaxString:     256,
	MaxText:       1600,
	MaxItems:      10,
	MaxMembers:    32,
	MaxDepth:      5,
	MinimalTokens: DefaultMinimalTokens,
}

// Errors of JSONLevels and MCPLevels.
var (
	ErrInvalidJSON       = errors.New("nekte: result is not valid JSON")
	ErrNotCallToolResult = errors.New("nekte: result is not an MCP CallToolResult object")
)

func (r Rules) withDefaults() Rules {
	d := DefaultRules
	for _, f := range []struct{ v, d *int }{
		{&r.MaxString, &d.MaxString}, {&r.MaxText, &d.MaxText}, {&r.MaxItems, &d.MaxItems},
		{&r.MaxMembers, &d.MaxMembers}, {&r.MaxDepth, &d.MaxDepth}, {&r.MinimalTokens, &d.MinimalTokens},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return r
}

// JSONLevels builds the three levels of a JSON result (a gRPC response as JSON) with
// DefaultRules.
func JSONLevels(v json.RawMessage) (Levels, error) { return DefaultRules.JSON(v) }

// JSON builds the three levels of a JSON result: full is v without insignificant
// whitespace, compact and minimal follow the JSON rules of the package doc.
func (r Rules) JSON(v json.RawMessage) (Levels, error) {
	r = r.withDefaults()
	var full bytes.Buffer
	if err := json.Compact(&full, v); err != nil {
		return Levels{}, ErrInvalidJSON
	}
	n, err := r.parse(v)
	if err != nil {
		return Levels{}, err
	}
	return Levels{
		Full:    full.Bytes(),
		Compact: r.appendCompact(nil, &n),
		Minimal: r.capLine(r.minimalOf(&n)),
	}, nil
}

// node is a JSON value as compact and minimal need it: containers keep at most the
// members and items compact shows, and below MaxDepth only their count.
type node struct {
	kind      byte   // 'o' object, 'a' array, 's' string, 'n' number or literal
	text      string // string: its value; number or literal: its JSON text
	keys      []string
	kids      []node
	total     int  // object or array: members or items in the input
	collapsed bool // container at MaxDepth: kids are not kept
}

// parse reads one JSON value into a node.
func (r *Rules) parse(v []byte) (node, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	n, err := r.parseValue(dec, 0)
	if err != nil {
		return node{}, ErrInvalidJSON
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return node{}, ErrInvalidJSON
	}
	return n, nil
}

func (r *Rules) parseValue(dec *json.Decoder, depth int) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		return r.parseContainer(dec, t == '{', depth)
	case string:
		return node{kind: 's', text: t}, nil
	case json.Number:
		return node{kind: 'n', text: string(t)}, nil
	case bool:
		return node{kind: 'n', text: strconv.FormatBool(t)}, nil
	default:
		return node{kind: 'n', text: jsonNull}, nil
	}
}

func (r *Rules) parseContainer(dec *json.Decoder, object bool, depth int) (node, error) {
	n := node{kind: 'a', collapsed: depth >= r.MaxDepth}
	limit := r.MaxItems
	if object {
		n.kind, limit = 'o', r.MaxMembers
	}
	for dec.More() {
		var key string
		if object {
			tok, err := dec.Token()
			if err != nil {
				return n, err
			}
			key, _ = tok.(string)
		}
		n.total++
		if n.collapsed || len(n.kids) >= limit {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return n, err
			}
			continue
		}
		kid, err := r.parseValue(dec, depth+1)
		if err != nil {
			return n, err
		}
		n.kids = append(n.kids, kid)
		if object {
			n.keys = append(n.keys, key)
		}
	}
	_, err := dec.Token() // closing delimiter
	return n, err
}

// jsonNull is the JSON null literal.
const jsonNull = "null"

// plural writes "1 item", "3 items".
func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}
