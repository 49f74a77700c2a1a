// Package fuzzseed gives the module's fuzz targets seeds taken from real traffic: the frames
// of the golden protocol files (server/testdata/**/*.txtar, codecs/nekte/testdata/levels) and
// the frames recorded once from real peers (testdata/recorded/*.txtar here: the MCP
// conformance suite against the demo MCP fixture, the npm MCP servers over stdio). A fuzz
// target adds them with f.Add beside its hand-written seeds, so that mutation starts from what
// clients and servers actually send.
//
// `make fuzz-corpus` (go run ./internal/fuzzseed/record) records the peers' frames again.
//
// The package imports nothing of the module, so the test of any package can use it.
package fuzzseed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Kind names what a frame is.
type Kind string

// The kinds of frame.
const (
	// JSONRPCRequest is a JSON-RPC 2.0 request, notification or batch a client sent to the
	// gateway's JSON-RPC face (valid or not: the goldens keep the refused ones too).
	JSONRPCRequest Kind = "jsonrpc.request"
	// JSONRPCResponse is the gateway's JSON-RPC response or batch of responses.
	JSONRPCResponse Kind = "jsonrpc.response"
	// NEKTERequest and NEKTEResponse are nekte.* calls and their results.
	NEKTERequest  Kind = "nekte.request"
	NEKTEResponse Kind = "nekte.response"
	// AgentRequest and AgentResponse are calls on agent-link routes and their results.
	AgentRequest  Kind = "agent.request"
	AgentResponse Kind = "agent.response"
	// A2ARequest and A2AResponse are A2A JSON-RPC binding bodies (v0.3 and v1.0).
	A2ARequest  Kind = "a2a.request"
	A2AResponse Kind = "a2a.response"
	// SessionRequest and SessionResponse are session RPC frames ({"id","type","payload"}).
	SessionRequest  Kind = "session.request"
	SessionResponse Kind = "session.response"
	// MCPRequest is an MCP JSON-RPC message with a method (a request or a notification,
	// from either side); MCPResponse is one with a result or an error.
	MCPRequest  Kind = "mcp.request"
	MCPResponse Kind = "mcp.response"
	// MCPResult is the result of an MCP tools/call (content items, structuredContent).
	MCPResult Kind = "mcp.result"
	// SSE is a whole text/event-stream body as a server sent it.
	SSE Kind = "sse"
	// JSON is a JSON document of no protocol (the NEKTE levels' inputs).
	JSON Kind = "json"
)

// Kinds lists every kind.
var Kinds = []Kind{
	JSONRPCRequest, JSONRPCResponse, NEKTERequest, NEKTEResponse, AgentRequest, AgentResponse,
	A2ARequest, A2AResponse, SessionRequest, SessionResponse, MCPRequest, MCPResponse, MCPResult,
	SSE, JSON,
}

// Requests lists the kinds a client sends to the gateway as JSON-RPC.
var Requests = []Kind{JSONRPCRequest, NEKTERequest, AgentRequest, A2ARequest, MCPRequest}

// Responses lists the kinds of JSON-RPC response.
var Responses = []Kind{JSONRPCResponse, NEKTEResponse, AgentResponse, A2AResponse, MCPResponse}

// A golden names a directory of golden txtar files (relative to the module root, slash
// separated, not recursive) and the kind of each section suffix ("1.send" has suffix "send").
// A suffix absent from the map is not a frame.
type golden struct {
	dir      string
	sections map[string]Kind
}

// The section suffixes of the golden files.
const (
	sectionSend   = "send"
	sectionSpec   = "spec"
	sectionGolden = "golden"
)

var jsonrpcSections = map[string]Kind{sectionSend: JSONRPCRequest, sectionSpec: JSONRPCResponse, sectionGolden: JSONRPCResponse}

var goldens = []golden{
	{"server/testdata/spec", jsonrpcSections},
	{"server/testdata/gatehouse", jsonrpcSections},
	{"server/testdata/gatehouse/nekte", map[string]Kind{sectionSend: NEKTERequest, sectionSpec: NEKTEResponse, sectionGolden: NEKTEResponse}},
	{"server/testdata/gatehouse/agents", map[string]Kind{sectionSend: AgentRequest, sectionSpec: AgentResponse, sectionGolden: AgentResponse}},
	{"server/testdata/a2a", map[string]Kind{"request": A2ARequest, sectionGolden: A2AResponse}},
	{"server/testdata/session", map[string]Kind{sectionSend: SessionRequest, sectionGolden: SessionResponse}},
	{"codecs/nekte/testdata/levels", map[string]Kind{"mcp": MCPResult, "json": JSON}},
	// The CLI's transcripts are command lines and terminal output, not frames.
	{"cmd/gatehouse/testdata/client", nil},
}

// DefaultMaxSeeds bounds what one call returns, so that a short fuzz run (make fuzz: 10 s a
// target, the time to gather baseline coverage included) spends its time mutating rather than
// running hundreds of seeds; FUZZSEED_MAX overrides it, 0 meaning every frame (make fuzz-long).
const DefaultMaxSeeds = 48

// maxSeeds returns the bound on what one call returns; 0 is none.
func maxSeeds() int {
	if v, ok := os.LookupEnv("FUZZSEED_MAX"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	return DefaultMaxSeeds
}

// sample returns at most maxSeeds() of items, spread evenly over them (the first always in).
func sample[T any](items []T) []T {
	n := maxSeeds()
	if n == 0 || len(items) <= n {
		return items
	}
	out := make([]T, 0, n)
	for i := range n {
		out = append(out, items[i*len(items)/n])
	}
	return out
}

// RecordedDir is where the recorded frames are, relative to the module root.
const RecordedDir = "internal/fuzzseed/testdata/recorded"

// maxFrame bounds a seed: larger frames slow every fuzz iteration down and teach nothing a
// smaller one does not.
const maxFrame = 16 << 10

type corpus struct {
	root   string
	frames map[Kind][][]byte
	seen   map[Kind]map[string]bool
	files  []string // every txtar read, relative to root
}

var (
	loadOnce sync.Once
	loaded   *corpus
	loadErr  error
)

func load() (*corpus, error) {
	loadOnce.Do(func() { loaded, loadErr = read() })
	return loaded, loadErr
}

// Root returns the module's root directory: the nearest parent of the working directory (a
// test runs in its package's directory) whose go.mod declares the module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/gatehouse-dev/gatehouse\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("fuzzseed: no go.mod of github.com/gatehouse-dev/gatehouse above the working directory")
		}
		dir = parent
	}
}

func read() (*corpus, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	c := &corpus{root: root, frames: map[Kind][][]byte{}, seen: map[Kind]map[string]bool{}}
	for _, g := range goldens {
		names, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(g.dir), "*.txtar"))
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("fuzzseed: no golden files in %s", g.dir)
		}
		for _, name := range names {
			if err := c.readGolden(name, g.sections); err != nil {
				return nil, err
			}
		}
	}
	names, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(RecordedDir), "*.txtar"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("fuzzseed: no recorded frames in %s (make fuzz-corpus)", RecordedDir)
	}
	for _, name := range names {
		if err := c.readRecorded(name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *corpus) rel(name string) string {
	r, err := filepath.Rel(c.root, name)
	if err != nil {
		return name
	}
	return filepath.ToSlash(r)
}

func (c *corpus) readGolden(name string, sections map[string]Kind) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	c.files = append(c.files, c.rel(name))
	for _, s := range ParseTxtar(data) {
		suffix := s.Name[strings.LastIndexByte(s.Name, '.')+1:]
		kind, ok := sections[suffix]
		if !ok {
			continue
		}
		body := s.Data
		if kind == A2ARequest {
			body = dropHeaders(body)
		}
		for _, frame := range splitFrames(body) {
			c.add(kind, frame)
		}
	}
	return nil
}

// readRecorded reads a recorder's file: each section is named "N KIND".
func (c *corpus) readRecorded(name string) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	c.files = append(c.files, c.rel(name))
	for _, s := range ParseTxtar(data) {
		_, kind, ok := strings.Cut(s.Name, " ")
		if !ok || !slices.Contains(Kinds, Kind(kind)) {
			return fmt.Errorf("fuzzseed: %s: section %q is not \"N KIND\" with a known kind", c.rel(name), s.Name)
		}
		frame := s.Data
		if Kind(kind) != SSE {
			frame = bytes.TrimSpace(frame)
		}
		c.add(Kind(kind), frame)
	}
	return nil
}

func (c *corpus) add(kind Kind, frame []byte) {
	if len(frame) == 0 || len(frame) > maxFrame {
		return
	}
	if c.seen[kind] == nil {
		c.seen[kind] = map[string]bool{}
	}
	if c.seen[kind][string(frame)] {
		return
	}
	c.seen[kind][string(frame)] = true
	c.frames[kind] = append(c.frames[kind], frame)
}

// dropHeaders drops the HTTP header lines ("Name: value") an A2A golden request starts with.
func dropHeaders(b []byte) []byte {
	for len(b) > 0 && b[0] != '{' && b[0] != '[' {
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		if !bytes.Contains(line, []byte(": ")) {
			break
		}
		b = rest
	}
	return b
}

// splitFrames returns a section's frames: the section when it is one JSON document (or not
// JSON at all: refused input is a frame too), else each of its lines.
func splitFrames(b []byte) [][]byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return [][]byte{b}
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) == 1 {
		return [][]byte{b}
	}
	var out [][]byte
	for _, l := range lines {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func get(tb testing.TB) *corpus {
	tb.Helper()
	c, err := load()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Frames returns the frames of the given kinds, in a fixed order, without duplicates. It
// fails tb when a kind has no frame: a target must not lose its seeds silently.
func Frames(tb testing.TB, kinds ...Kind) [][]byte {
	tb.Helper()
	return sampleKinds(all(tb, kinds...))
}

// all returns every frame of each kind, per kind; it fails tb when a kind has none.
func all(tb testing.TB, kinds ...Kind) [][][]byte {
	tb.Helper()
	c := get(tb)
	out := make([][][]byte, 0, len(kinds))
	for _, k := range kinds {
		if len(c.frames[k]) == 0 {
			tb.Fatalf("fuzzseed: no frame of kind %q", k)
		}
		out = append(out, c.frames[k])
	}
	return out
}

// sampleKinds takes the frames of the kinds in turns (one of each kind, then the next of
// each …), without duplicates, up to maxSeeds(): every kind asked for is represented.
func sampleKinds(perKind [][][]byte) [][]byte {
	limit := maxSeeds()
	var out [][]byte
	seen := map[string]bool{}
	for i := 0; ; i++ {
		more := false
		for _, frames := range perKind {
			if i >= len(frames) {
				continue
			}
			more = true
			if f := frames[i]; !seen[string(f)] {
				seen[string(f)] = true
				out = append(out, slices.Clone(f))
				if limit > 0 && len(out) == limit {
					return out
				}
			}
		}
		if !more {
			return out
		}
	}
}

// allFrames is every frame of the kinds, for the calls that derive seeds from frames.
func allFrames(tb testing.TB, kinds ...Kind) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, frames := range all(tb, kinds...) {
		out = append(out, frames...)
	}
	return out
}

// Add adds every frame of the given kinds to a target whose only argument is []byte.
func Add(f *testing.F, kinds ...Kind) {
	f.Helper()
	for _, b := range Frames(f, kinds...) {
		f.Add(b)
	}
}

// AddString adds every frame of the given kinds to a target whose only argument is a string.
func AddString(f *testing.F, kinds ...Kind) {
	f.Helper()
	for _, b := range Frames(f, kinds...) {
		f.Add(string(b))
	}
}

// Members returns the member name of every frame of the given kinds that is a JSON object
// with it (for example the "params" of requests, the "payload" of session frames), and of
// every object in a frame that is a batch, without duplicates. It fails tb when none has it.
func Members(tb testing.TB, name string, kinds ...Kind) [][]byte {
	tb.Helper()
	var out [][]byte
	seen := map[string]bool{}
	add := func(obj json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(obj, &m) != nil {
			return
		}
		if v, ok := m[name]; ok && !seen[string(v)] {
			seen[string(v)] = true
			out = append(out, []byte(v))
		}
	}
	for _, f := range allFrames(tb, kinds...) {
		var batch []json.RawMessage
		if json.Unmarshal(f, &batch) == nil {
			for _, obj := range batch {
				add(obj)
			}
			continue
		}
		add(f)
	}
	if len(out) == 0 {
		tb.Fatalf("fuzzseed: no frame of %v has a member %q", kinds, name)
	}
	return sample(out)
}

// Strings returns the JSON strings (decoded) of the frames of the given kinds, object keys
// and values, of at most maxLen bytes, without duplicates.
func Strings(tb testing.TB, maxLen int, kinds ...Kind) []string {
	tb.Helper()
	var out []string
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if len(v) <= maxLen && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(k)
				walk(v[k])
			}
		}
	}
	for _, f := range allFrames(tb, kinds...) {
		var v any
		if json.Unmarshal(f, &v) == nil {
			walk(v)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("fuzzseed: no string in the frames of %v", kinds)
	}
	return sample(out)
}

// Files returns the contents of the module's files matching pattern (path.Match syntax on
// the slash-separated path relative to the module root, e.g. "configs/*.yaml"), sorted by
// name. It fails tb when none matches.
func Files(tb testing.TB, patterns ...string) [][]byte {
	tb.Helper()
	c := get(tb)
	var out [][]byte
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			tb.Fatalf("fuzzseed: pattern %q: %v", p, err)
		}
		names, err := filepath.Glob(filepath.Join(c.root, filepath.FromSlash(p)))
		if err != nil {
			tb.Fatal(err)
		}
		if len(names) == 0 {
			tb.Fatalf("fuzzseed: no file matches %s", p)
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// Section is one file of a txtar archive.
type Section struct {
	Name string
	Data []byte
}

// ParseTxtar splits a txtar archive ("-- NAME --" lines) into its sections; the comment
// before the first is dropped. (golang.org/x/tools/txtar's format, without the dependency.)
func ParseTxtar(data []byte) []Section {
	var out []Section
	var cur *Section
	for len(data) > 0 {
		line, rest, found := bytes.Cut(data, []byte("\n"))
		if found {
			line = append(line, '\n')
		}
		if name, ok := marker(line); ok {
			out = append(out, Section{Name: name})
			cur = &out[len(out)-1]
		} else if cur != nil {
			cur.Data = append(cur.Data, line...)
		}
		data = rest
	}
	return out
}

func marker(line []byte) (string, bool) {
	l := bytes.TrimRight(line, "\r\n")
	if !bytes.HasPrefix(l, []byte("-- ")) || !bytes.HasSuffix(l, []byte(" --")) || len(l) < 6 {
		return "", false
	}
	return strings.TrimSpace(string(l[3 : len(l)-3])), true
}

// FormatTxtar writes sections as a txtar archive after comment.
func FormatTxtar(comment string, sections []Section) []byte {
	var b bytes.Buffer
	b.WriteString(comment)
	if comment != "" && !strings.HasSuffix(comment, "\n") {
		b.WriteByte('\n')
	}
	for _, s := range sections {
		fmt.Fprintf(&b, "-- %s --\n", s.Name)
		b.Write(s.Data)
		if len(s.Data) > 0 && s.Data[len(s.Data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// GoldenFiles lists the golden and recorded txtar files the corpus was read from, relative
// to the module root; Classified reports whether a txtar file's directory is one fuzzseed
// knows (it reads its frames or has decided they are not frames).
func GoldenFiles(tb testing.TB) []string {
	tb.Helper()
	return slices.Clone(get(tb).files)
}

// Classified reports whether fuzzseed knows the directory of a testdata txtar file (relative
// to the module root, slash separated).
func Classified(rel string) bool {
	dir := path.Dir(rel)
	if dir == RecordedDir {
		return true
	}
	return slices.ContainsFunc(goldens, func(g golden) bool { return g.dir == dir })
}

// Call is the method and params of a request frame.
type Call struct {
	Method string
	Params []byte // nil when the request has none
}

// Calls returns the method and params of every request (batch members included) among the
// frames of the given kinds, without duplicates. It fails tb when there is none.
func Calls(tb testing.TB, kinds ...Kind) []Call {
	tb.Helper()
	var out []Call
	seen := map[string]bool{}
	add := func(obj json.RawMessage) {
		var m struct {
			Method *string         `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(obj, &m) != nil || m.Method == nil {
			return
		}
		key := *m.Method + "\x00" + string(m.Params)
		if !seen[key] {
			seen[key] = true
			out = append(out, Call{Method: *m.Method, Params: []byte(m.Params)})
		}
	}
	for _, f := range allFrames(tb, kinds...) {
		var batch []json.RawMessage
		if json.Unmarshal(f, &batch) == nil {
			for _, obj := range batch {
				add(obj)
			}
			continue
		}
		add(f)
	}
	if len(out) == 0 {
		tb.Fatalf("fuzzseed: no request among the frames of %v", kinds)
	}
	return sample(out)
}

// Find returns every value of a member called name, at any depth, in the frames of the given
// kinds (for example "arguments" of MCP tools/call requests, "inputSchema" of tools/list
// results), without duplicates. It fails tb when there is none.
func Find(tb testing.TB, name string, kinds ...Kind) [][]byte {
	tb.Helper()
	var out [][]byte
	seen := map[string]bool{}
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if k == name && !seen[string(obj[k])] {
					seen[string(obj[k])] = true
					out = append(out, []byte(obj[k]))
				}
				walk(obj[k])
			}
			return
		}
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) == nil {
			for _, e := range arr {
				walk(e)
			}
		}
	}
	for _, f := range allFrames(tb, kinds...) {
		walk(f)
	}
	if len(out) == 0 {
		tb.Fatalf("fuzzseed: no member %q in the frames of %v", name, kinds)
	}
	return sample(out)
}
