package loader

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Document is a parsed YAML configuration file with its ${ENV} references substituted. It
// remembers where every value came from, so that errors found later, by the schema, the
// strict decode or a module's own checks, can name a line and column.
//
// A Document is not changed after Parse returns; its methods may be called concurrently.
type Document struct {
	file    string
	size    int                 // the file's length in bytes
	body    ast.Node            // the document's root node; nil for an empty document
	anchors map[string]ast.Node // anchor name → anchored node
	typed   map[ast.Node]string // scalars typed from a substitution → the text substituted
	inst    any                 // the document as JSON values, for the schema
	locs    map[string]*loc     // JSON pointer → where the value is
	byPos   map[position][]*loc // position → the values there, for decode errors
	hash    [sha256.Size]byte
}

// Parse parses data, the contents of the named file, and substitutes its ${ENV} references
// using lookupEnv (os.LookupEnv when nil). An empty file, or one holding only comments, is an
// empty document.
//
// On return, the Document is non-nil iff err is nil; err is an [ErrorList] of every
// document-level problem: a YAML syntax error, duplicate keys, undefined variables or bad
// references, YAML tags, several documents in one file, aliases to anchors not defined before
// them, and documents that expand to too many values through aliases.
func Parse(file string, data []byte, lookupEnv func(string) (string, bool)) (*Document, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, ErrorList{syntaxError(file, err)}
	}
	p := &preparer{
		file:    file,
		lookup:  lookupEnv,
		anchors: map[string]ast.Node{},
		typed:   map[ast.Node]string{},
		vars:    map[string]envVar{},
	}
	body := p.document(f)
	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	d := &Document{file: file, size: len(data), body: body, anchors: p.anchors, typed: p.typed}
	d.hash = contentHash(data, p.vars)
	inst, locs, err := d.build(nil, true)
	if err != nil {
		return nil, ErrorList{{File: file, Msg: err.Error()}}
	}
	d.inst, d.locs = inst, locs
	d.byPos = make(map[position][]*loc, len(locs))
	for _, ptr := range slices.Sorted(maps.Keys(locs)) { // sorted: the same path every run
		l := locs[ptr]
		d.byPos[l.val] = append(d.byPos[l.val], l)
		if l.hasKey {
			d.byPos[l.key] = append(d.byPos[l.key], l)
		}
	}
	return d, nil
}

// syntaxError turns goccy's parse error into one positioned Error.
func syntaxError(file string, err error) Error {
	e := Error{File: file, Msg: err.Error()}
	if ye, ok := errors.AsType[yaml.Error](err); ok {
		e.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Col = tk.Position.Line, max(tk.Position.Column, 1)
		}
	}
	return e
}

// contentHash hashes the file and the value of every variable it refers to: two documents
// with the same hash decode to the same value.
func contentHash(data []byte, vars map[string]envVar) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", len(data))
	h.Write(data)
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		v := vars[name]
		fmt.Fprintf(h, "%s %t %d\n%s", name, v.set, len(v.value), v.value)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// Hash returns a SHA-256 over the file's bytes and the values of the environment variables
// it refers to, so that a watcher can skip a reload when nothing it depends on has changed.
// The hash depends on secret values: keep it out of logs and responses.
func (d *Document) Hash() [sha256.Size]byte { return d.hash }

// Has reports whether the value at path (as in "batch.tiers.enterprise" or
// "routes[2].method") is present in the file, directly or through an alias or merge key. It
// lets a caller tell a key that is absent from one set to its zero value.
func (d *Document) Has(path string) bool {
	tokens, ok := parsePath(path)
	if !ok || (len(tokens) == 0 && d.body == nil) {
		return false
	}
	_, ok = d.locs[pointer(tokens)]
	return ok
}

// Errorf returns an Error for the value at path, positioned where the value is in the file.
// When the path is absent, the error takes the position of the nearest ancestor that is
// present, or no position (0:0) when there is none; Path is always path as given. Modules use
// it for the semantic checks they run after Decode:
//
//	return doc.Errorf("batch.max", "must be at least batch.default (%d)", c.Default)
func (d *Document) Errorf(path string, format string, args ...any) Error {
	e := Error{File: d.file, Path: path, Msg: fmt.Sprintf(format, args...)}
	tokens, ok := parsePath(path)
	for ok && len(tokens) > 0 {
		if l := d.locs[pointer(tokens)]; l != nil {
			e.Line, e.Col = l.pos().line, l.pos().col
			break
		}
		tokens = tokens[:len(tokens)-1]
	}
	return e
}
