package loader

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// preparer walks a parsed file once, in document order: it substitutes ${ENV} references in
// scalar values and reports what the configuration language refuses (duplicate keys, tags,
// several documents, aliases to anchors not yet defined, complex keys).
type preparer struct {
	file    string
	lookup  func(string) (string, bool)
	anchors map[string]ast.Node // anchor name → anchored node, once the anchor is complete
	typed   map[ast.Node]string // scalars typed from a substitution → the text substituted
	vars    map[string]envVar
	errs    ErrorList
}

// document prepares the file's only non-empty document and returns its root node, or nil
// when the file holds no document.
func (p *preparer) document(f *ast.File) ast.Node {
	var body ast.Node
	for _, doc := range f.Docs {
		switch {
		case doc == nil || doc.Body == nil:
			// an empty document, as after a leading "---"
		case body != nil:
			tk := doc.Start
			if tk == nil {
				tk = doc.Body.GetToken()
			}
			p.errorAtf(tk, "a configuration file holds a single YAML document; remove this one or its \"---\"")
		default:
			doc.Body = p.node(doc.Body)
			body = doc.Body
		}
	}
	return body
}

// node prepares n and returns the node that replaces it.
func (p *preparer) node(n ast.Node) ast.Node {
	switch n := n.(type) {
	case *ast.MappingNode:
		p.mapping(n.Values)
	case *ast.MappingValueNode:
		p.mapping([]*ast.MappingValueNode{n})
	case *ast.SequenceNode:
		p.sequence(n)
	case *ast.AnchorNode:
		p.anchor(n)
	case *ast.AliasNode:
		if _, ok := p.anchors[aliasName(n)]; !ok {
			p.errorAtf(n.GetToken(), "alias *%s does not refer to an anchor defined before it", aliasName(n))
		}
	case *ast.TagNode:
		p.errorAtf(n.GetToken(), "YAML tags such as %s are not supported; quote a value to make it a string", n.GetToken().Value)
	case *ast.StringNode:
		return p.scalar(n)
	case *ast.LiteralNode:
		return p.literal(n)
	}
	return n
}

func (p *preparer) mapping(values []*ast.MappingValueNode) {
	seen := map[string]int{}
	for i, mv := range values {
		if mv == nil {
			continue
		}
		if mv.Key != nil && mv.Key.IsMergeKey() {
			mv.Value = p.node(mv.Value)
			p.checkMerge(mv.Key, mv.Value, i)
			continue
		}
		name, ok := keyText(mv.Key)
		switch first, dup := seen[name]; {
		case !ok:
			p.errorAtf(keyToken(mv), "keys must be plain scalars")
		case dup:
			p.errorAtf(keyToken(mv), "duplicate key %q (first defined at line %d)", name, first)
		default:
			seen[name] = tokenLine(keyToken(mv))
		}
		mv.Value = p.node(mv.Value)
	}
}

func (p *preparer) sequence(n *ast.SequenceNode) {
	for i, v := range n.Values {
		n.Values[i] = p.node(v)
		if i < len(n.Entries) && n.Entries[i] != nil && n.Entries[i].Value == v {
			n.Entries[i].Value = n.Values[i]
		}
	}
}

// anchor records the anchor after its value, so that an alias inside the value cannot refer
// to it and no alias can form a cycle.
func (p *preparer) anchor(n *ast.AnchorNode) {
	n.Value = p.node(n.Value)
	if n.Name == nil || n.Name.GetToken() == nil {
		return
	}
	name := n.Name.GetToken().Value
	if _, dup := p.anchors[name]; dup {
		p.errorAtf(n.GetToken(), "anchor &%s is defined twice", name)
		return
	}
	p.anchors[name] = n.Value
}

// checkMerge reports a merge key (<<) that is not the first key of its mapping or whose value
// is not one mapping. goccy lets later keys override earlier ones, merged or not, where YAML
// gives a mapping's own keys precedence: with the merge key first both agree.
func (p *preparer) checkMerge(key ast.Node, v ast.Node, index int) {
	if index > 0 {
		p.errorAtf(key.GetToken(), "a merge key (<<) must be the first key of its mapping")
	}
	if resolve(v, p.anchors) == nil {
		return // an alias error, already reported
	}
	if mergeSource(v, p.anchors) == nil {
		p.errorAtf(key.GetToken(), "a merge key (<<) takes one mapping, such as an alias to one")
	}
}

// scalar substitutes the ${ENV} references of a plain or quoted scalar. The result is typed
// by its text alone, quoted or not: in a flow collection the reference must be quoted.
func (p *preparer) scalar(n *ast.StringNode) ast.Node {
	if !strings.Contains(n.Value, "$") {
		return n
	}
	text, ok := p.expand(n.Value, n.Token)
	if !ok {
		return n
	}
	return p.retype(n.Token, text, plainType(text))
}

// literal substitutes the ${ENV} references of a block scalar (| or >); the result is a
// string positioned at the block's indicator.
func (p *preparer) literal(n *ast.LiteralNode) ast.Node {
	if n.Value == nil || n.Start == nil || !strings.Contains(n.Value.Value, "$") {
		return n
	}
	text, ok := p.expand(n.Value.Value, n.Start)
	if !ok {
		return n
	}
	tk := n.Value.Token
	tk.Position = n.Start.Position
	return p.retype(tk, text, token.DoubleQuoteType)
}

// expand substitutes value, the value of the scalar at tk, reporting every problem.
func (p *preparer) expand(value string, tk *token.Token) (string, bool) {
	text, problems := expand(value, p.lookup, p.vars)
	for _, pr := range problems {
		line, col := offsetPos(tk, value, pr.off)
		p.errs = append(p.errs, Error{File: p.file, Line: line, Col: col, Msg: pr.msg})
	}
	return text, len(problems) == 0
}

// retype rewrites tk in place to hold text as a scalar of type typ and returns a new node
// for it. The token stays in the file's token list with its position, and its source text
// becomes a safe rendering of text (digits, true/false, or a double-quoted string), because
// goccy re-reads that source when it decodes into a type with its own unmarshaler.
func (p *preparer) retype(tk *token.Token, text string, typ token.Type) ast.Node {
	body := strings.TrimLeft(tk.Origin, " \t\r\n")
	lead := tk.Origin[:len(tk.Origin)-len(body)]
	trail := body[len(strings.TrimRight(body, " \t\r\n")):]
	render := text
	if typ == token.DoubleQuoteType {
		render = strconv.Quote(text)
		tk.CharacterType, tk.Indicator = token.CharacterTypeIndicator, token.QuotedScalarIndicator
	}
	tk.Type, tk.Value, tk.Origin = typ, text, lead+render+trail
	var n ast.Node
	switch typ {
	case token.IntegerType:
		n = ast.Integer(tk)
	case token.FloatType:
		n = ast.Float(tk)
	case token.BoolType:
		n = ast.Bool(tk)
	default:
		return ast.String(tk)
	}
	p.typed[n] = text
	return n
}

func (p *preparer) errorAtf(tk *token.Token, format string, args ...any) {
	line, col := tokenPos(tk)
	p.errs = append(p.errs, Error{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

// offsetPos returns the position of byte off of value, the value of the scalar at tk: exact
// when the scalar is written on one line without escapes, the scalar's start otherwise.
func offsetPos(tk *token.Token, value string, off int) (line, col int) {
	line, col = tokenPos(tk)
	if line == 0 || off < 0 || off > len(value) {
		return line, col
	}
	src := strings.TrimSpace(tk.Origin)
	shift := utf8.RuneCountInString(value[:off])
	switch {
	case tk.Type == token.StringType && src == value:
		return line, col + shift
	case tk.Type == token.DoubleQuoteType && src == `"`+value+`"`,
		tk.Type == token.SingleQuoteType && src == `'`+value+`'`:
		return line, col + 1 + shift
	}
	return line, col
}

// tokenPos returns the 1-based position of tk, or 0, 0.
func tokenPos(tk *token.Token) (line, col int) {
	if tk == nil || tk.Position == nil || tk.Position.Line <= 0 {
		return 0, 0
	}
	return tk.Position.Line, max(tk.Position.Column, 1)
}

func tokenLine(tk *token.Token) int {
	line, _ := tokenPos(tk)
	return line
}

func keyToken(mv *ast.MappingValueNode) *token.Token {
	if mv.Key != nil {
		return mv.Key.GetToken()
	}
	return mv.GetToken()
}

// keyText returns the text of a scalar mapping key as goccy gives it to a map[string]T:
// strings as they are, null as "null", other scalars formatted (0x1F is "31").
func keyText(k ast.MapKeyNode) (string, bool) {
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		inner, ok := mk.Value.(ast.MapKeyNode)
		if !ok {
			return "", false
		}
		k = inner
	}
	switch k := k.(type) {
	case *ast.StringNode:
		return k.Value, true
	case *ast.NullNode:
		return "null", true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return fmt.Sprint(k.(ast.ScalarNode).GetValue()), true
	}
	return "", false
}

func aliasName(n *ast.AliasNode) string {
	if n.Value == nil || n.Value.GetToken() == nil {
		return ""
	}
	return n.Value.GetToken().Value
}

// resolve follows anchors and aliases from n to the node they stand for; nil when an alias
// refers to no anchor.
func resolve(n ast.Node, anchors map[string]ast.Node) ast.Node {
	for range len(anchors) + 2 {
		switch m := n.(type) {
		case *ast.AnchorNode:
			n = m.Value
		case *ast.AliasNode:
			n = anchors[aliasName(m)]
		default:
			return n
		}
	}
	return nil
}

// mergeSource returns the entries of the mapping a merge key's value v stands for, or nil.
func mergeSource(v ast.Node, anchors map[string]ast.Node) []*ast.MappingValueNode {
	switch m := resolve(v, anchors).(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}
