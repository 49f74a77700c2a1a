package loader

import (
	"fmt"
	"strconv"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// aliasAllowance bounds how many more values than bytes a document may hold: a file without
// aliases holds fewer values than bytes, and a few lines of nested aliases ("billion laughs")
// must not expand to millions of values.
const aliasAllowance = 1 << 16

// position is a 1-based line and column; the zero position is unknown.
type position struct{ line, col int }

func positionOf(tk *token.Token) position {
	line, col := tokenPos(tk)
	return position{line, col}
}

// loc is where one value of the document is.
type loc struct {
	path   string   // dotted path, as in "routes[2].method"
	parent string   // dotted path of the enclosing mapping or sequence
	key    position // the key's position, when the value is in a mapping
	hasKey bool
	val    position // where the value starts
	node   ast.Node // the value's node, anchors and aliases resolved
}

// pos is where errors about the value point: at a scalar itself, at the key of a mapping or
// sequence (whose content starts on the next line), else where the value starts.
func (l *loc) pos() position {
	if !l.hasKey {
		return l.val
	}
	switch n := l.node.(type) {
	case *ast.NullNode:
		if n.Token == nil || n.Token.Type == token.ImplicitNullType {
			return l.key // "key:" with nothing after it
		}
		return l.val
	case ast.ScalarNode:
		return l.val
	}
	return l.key
}

// builder turns the prepared AST into JSON values (map[string]any, []any, string, int64,
// uint64, float64, bool, nil) for the schema, recording where each value is.
type builder struct {
	d      *Document
	limit  int             // the most values the document may expand to
	force  map[string]bool // pointers whose typed substitution is kept as its text
	locs   map[string]*loc // nil when not recording
	values int
}

// build returns the document as JSON values; an empty document is an empty mapping. With
// record set it also returns the location of every value.
func (d *Document) build(force map[string]bool, record bool) (any, map[string]*loc, error) {
	b := &builder{d: d, force: force, limit: d.size + aliasAllowance}
	if record {
		b.locs = map[string]*loc{}
	}
	if d.body == nil {
		return map[string]any{}, b.locs, nil
	}
	v := b.value(d.body, "", "", "", position{}, false)
	if b.values > b.limit {
		return nil, nil, fmt.Errorf("the document expands to more than %d values through aliases", b.limit)
	}
	return v, b.locs, nil
}

// value converts n, found at JSON pointer ptr and dotted path path.
func (b *builder) value(n ast.Node, ptr, path, parent string, key position, hasKey bool) any {
	if b.values++; b.values > b.limit {
		return nil
	}
	if n == nil {
		if b.locs != nil && b.locs[ptr] == nil {
			b.locs[ptr] = &loc{path: path, parent: parent, key: key, hasKey: hasKey, val: key}
		}
		return nil
	}
	at := positionOf(n.GetToken())
	target := resolve(n, b.d.anchors)
	if b.locs != nil && b.locs[ptr] == nil {
		l := &loc{path: path, parent: parent, key: key, hasKey: hasKey, val: at, node: target}
		if _, alias := n.(*ast.AliasNode); !alias {
			l.val = startOf(target, at)
		}
		b.locs[ptr] = l
	}
	switch t := target.(type) {
	case *ast.MappingNode:
		m := map[string]any{}
		b.fill(m, t.Values, ptr, path)
		return m
	case *ast.MappingValueNode:
		m := map[string]any{}
		b.fill(m, []*ast.MappingValueNode{t}, ptr, path)
		return m
	case *ast.SequenceNode:
		s := make([]any, len(t.Values))
		for i, item := range t.Values {
			s[i] = b.value(item, ptr+"/"+strconv.Itoa(i), childIndex(path, i), path, position{}, false)
		}
		return s
	case *ast.LiteralNode:
		if t.Value != nil {
			return t.Value.Value
		}
		return ""
	case ast.ScalarNode:
		if text, ok := b.d.typed[t]; ok && b.force[ptr] {
			return text
		}
		return t.GetValue()
	}
	return nil
}

// fill adds the entries of a mapping to m: its own keys first, then those of its merge key
// (<<), each key taken from the first place that defines it.
func (b *builder) fill(m map[string]any, entries []*ast.MappingValueNode, ptr, path string) {
	var merges []ast.Node
	for _, mv := range entries {
		if mv == nil {
			continue
		}
		if mv.Key != nil && mv.Key.IsMergeKey() {
			merges = append(merges, mv.Value)
			continue
		}
		k, ok := keyText(mv.Key)
		if _, seen := m[k]; !ok || seen {
			continue
		}
		m[k] = b.value(mv.Value, ptr+"/"+escapeToken(k), childKey(path, k), path, positionOf(keyToken(mv)), true)
	}
	for _, v := range merges {
		b.fill(m, mergeSource(v, b.d.anchors), ptr, path)
	}
}

// startOf returns where node n begins in the file; at is the position of its first token.
func startOf(n ast.Node, at position) position {
	switch t := n.(type) {
	case *ast.MappingNode:
		if !t.IsFlowStyle && len(t.Values) > 0 && t.Values[0].Key != nil {
			return positionOf(t.Values[0].Key.GetToken())
		}
	case *ast.MappingValueNode:
		if t.Key != nil {
			return positionOf(t.Key.GetToken())
		}
	}
	if n != nil {
		if p := positionOf(n.GetToken()); p.line > 0 {
			return p
		}
	}
	return at
}
