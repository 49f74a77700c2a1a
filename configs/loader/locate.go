package loader

import (
	"reflect"
	"slices"
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// goccy reports errors from unmarshalers (time.Duration, encoding.TextUnmarshaler, a module's
// own UnmarshalYAML) without a position. locate finds the value responsible by decoding
// pruned copies of the document.

// locate finds the value that makes decoding into typ fail with err: starting at the root,
// it keeps one child of the current node at a time and descends into the first whose pruned
// document still fails the same way. It returns nil when not even the root reproduces err.
func (d *Document) locate(err error, typ reflect.Type) *loc {
	want := err.Error()
	fails := func(pruned ast.Node) bool {
		e := yaml.NodeToValue(pruned, reflect.New(typ).Interface(), decodeOptions()...)
		return e != nil && e.Error() == want
	}
	var (
		path  []step
		found = d.locs[""]
	)
	for found != nil {
		var next *loc
		for _, s := range children(walkTo(d.body, path)) {
			candidate := append(slices.Clip(path), s)
			if fails(prune(d.body, candidate)) {
				path, next = candidate, d.locs[stepsPointer(candidate)]
				break
			}
		}
		if next == nil {
			break
		}
		found = next
	}
	return found
}

// step selects one child of a mapping (by key) or of a sequence (by index).
type step struct {
	key   string
	index int // -1 for a key
}

func stepsPointer(steps []step) string {
	tokens := make([]string, len(steps))
	for i, s := range steps {
		tokens[i] = s.key
		if s.index >= 0 {
			tokens[i] = strconv.Itoa(s.index)
		}
	}
	return pointer(tokens)
}

// children lists the steps into n's own entries and items; merged keys are not followed.
func children(n ast.Node) []step {
	var steps []step
	switch t := n.(type) {
	case *ast.MappingNode:
		for _, mv := range t.Values {
			if k, ok := keyText(mv.Key); ok && !mv.Key.IsMergeKey() {
				steps = append(steps, step{key: k, index: -1})
			}
		}
	case *ast.SequenceNode:
		for i := range t.Values {
			steps = append(steps, step{index: i})
		}
	}
	return steps
}

// walkTo returns the node reached from n by steps, anchors resolved but aliases not followed.
func walkTo(n ast.Node, steps []step) ast.Node {
	for _, s := range steps {
		n = child(unanchor(n), s)
	}
	return unanchor(n)
}

func unanchor(n ast.Node) ast.Node {
	for {
		a, ok := n.(*ast.AnchorNode)
		if !ok {
			return n
		}
		n = a.Value
	}
}

func child(n ast.Node, s step) ast.Node {
	switch t := n.(type) {
	case *ast.MappingNode:
		for _, mv := range t.Values {
			if k, ok := keyText(mv.Key); ok && k == s.key && !mv.Key.IsMergeKey() {
				return mv.Value
			}
		}
	case *ast.SequenceNode:
		if s.index >= 0 && s.index < len(t.Values) {
			return t.Values[s.index]
		}
	}
	return nil
}

// prune returns a copy of the path from n along steps, each mapping keeping only the entry
// stepped into and each sequence only the item; the node at the end is shared, not copied.
// Anchors are kept around what they wrap.
func prune(n ast.Node, steps []step) ast.Node {
	if len(steps) == 0 || n == nil {
		return n
	}
	switch t := n.(type) {
	case *ast.AnchorNode:
		c := *t
		c.Value = prune(t.Value, steps)
		return &c
	case *ast.MappingNode:
		for _, mv := range t.Values {
			if k, ok := keyText(mv.Key); ok && k == steps[0].key && !mv.Key.IsMergeKey() {
				entry := *mv
				entry.Value = prune(mv.Value, steps[1:])
				c := *t
				c.Values = []*ast.MappingValueNode{&entry}
				return &c
			}
		}
	case *ast.SequenceNode:
		if i := steps[0].index; i >= 0 && i < len(t.Values) {
			c := *t
			c.Values = []ast.Node{prune(t.Values[i], steps[1:])}
			c.Entries = nil
			return &c
		}
	}
	return n
}
