package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory, seen from this package's.
const root = "../.."

// sourceFiles returns the module's non-test, non-generated Go files, relative to root,
// parsed.
func sourceFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".pb.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found only %d source files under %s", len(files), root)
	}
	return files
}

// importNames returns the names f refers to the module packages under prefix by.
func importNames(f *ast.File, prefix string) map[string]string {
	names := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != prefix && !strings.HasPrefix(p, prefix+"/") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	return names
}

// TestNoConcreteTargetSwitches: outside routing, no code type-switches on or asserts a
// type of a routing package (a target's concrete type): stages and faces ask the optional
// interfaces of gateway (Describer, Backended, Unretryable), and the table hands out what
// a face needs by name (DESIGN.md, Seams).
func TestNoConcreteTargetSwitches(t *testing.T) {
	for path, f := range sourceFiles(t) {
		if strings.HasPrefix(path, "routing/") {
			continue
		}
		routing := importNames(f, module+"/routing")
		if len(routing) == 0 {
			continue
		}
		check := func(expr ast.Expr) {
			if star, ok := expr.(*ast.StarExpr); ok {
				expr = star.X
			}
			sel, ok := expr.(*ast.SelectorExpr)
			if !ok {
				return
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && routing[pkg.Name] != "" {
				t.Errorf("%s: type switch or assertion on %s.%s, a concrete type of %s", path, pkg.Name, sel.Sel.Name, routing[pkg.Name])
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if n.Type != nil {
					check(n.Type)
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					check(e)
				}
			}
			return true
		})
	}
}

// protocolLibraries are the packages that speak a protocol on the wire; only faces (and
// the targets and codecs below them) may import them, never the assembly.
var protocolLibraries = []string{
	"github.com/gin-gonic/gin",
	"github.com/gorilla/websocket",
	"github.com/mark3labs/mcp-go",
	module + "/codecs/sse",
	module + "/codecs/msgpack",
}

// TestServerHoldsNoProtocolHandling: the server is assembly only (DESIGN.md): it imports no
// protocol library and no face's wire codec; each protocol is a room under faces/.
func TestServerHoldsNoProtocolHandling(t *testing.T) {
	for path, f := range sourceFiles(t) {
		if !strings.HasPrefix(path, "server/") || strings.HasPrefix(path, "server/config/") {
			continue
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, lib := range protocolLibraries {
				if p == lib || strings.HasPrefix(p, lib+"/") {
					t.Errorf("%s imports %s: protocol handling belongs in a face (faces/...), not the assembly", path, p)
				}
			}
		}
	}
}
