// Command record records the JSON-RPC frames real MCP peers send and receive, for the fuzz
// targets' seeds (package fuzzseed): the official MCP conformance suite against the demo MCP
// fixture over streamable HTTP (through a recording proxy on loopback), and the pinned npm
// MCP servers over stdio driven by a fixed script. It writes one txtar file per source into
// internal/fuzzseed/testdata/recorded, each section "N KIND" one frame.
//
//	make fuzz-corpus      (= go run ./internal/fuzzseed/record, after make mcp-servers conformance-tools)
//
// The frames are deduplicated and bounded (a few per method and kind) so that the corpus
// stays small; a source whose tools are not installed is left as it is, and said so.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/conformance"
	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// Members of the MCP messages the script sends.
const (
	keyName      = "name"
	keyArguments = "arguments"
)

const (
	maxFrame   = 12 << 10 // a larger frame is not kept (tools/list results with their schemas fit)
	perGroup   = 3        // frames kept per (kind, method or result shape)
	callWait   = 5 * time.Second
	suiteLimit = 10 * time.Minute
)

func main() {
	out := flag.String("out", fuzzseed.RecordedDir, "directory of the recorded txtar files")
	tmp := flag.String("tmp", ".tmp", "where make installed the test tools (npm/, conformance/)")
	flag.Parse()
	if err := run(*out, *tmp); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

// sayf reports progress on stderr.
func sayf(format string, args ...any) { _, _ = fmt.Fprintf(os.Stderr, format, args...) }

func run(out, tmp string) error {
	if err := os.MkdirAll(out, 0o750); err != nil {
		return err
	}
	var errs []error
	bin := filepath.Join(tmp, "npm", "node_modules", ".bin")
	for _, s := range []struct{ name, bin string }{
		{"npm-server-everything", "mcp-server-everything"},
		{"npm-server-memory", "mcp-server-memory"},
		{"npm-server-filesystem", "mcp-server-filesystem"},
	} {
		path, err := filepath.Abs(filepath.Join(bin, s.bin))
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			sayf("record: %s not installed (make mcp-servers); %s.txtar left as it is\n", path, s.name)
			continue
		}
		rec := newRecorder()
		if err := recordStdio(rec, path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
			continue
		}
		errs = append(errs, rec.write(filepath.Join(out, s.name+".txtar"),
			fmt.Sprintf("Frames of %s (npm, pinned in make/mcp.mk) over stdio, driven by internal/fuzzseed/record.", s.bin)))
	}
	tools := conformance.Tools{Dir: filepath.Join(tmp, "conformance")}
	if err := tools.Check(context.Background()); err != nil {
		sayf("record: the conformance suite is not installed (make conformance-tools: %v); conformance.txtar left as it is\n", err)
	} else {
		rec := newRecorder()
		if err := recordConformance(rec, tools); err != nil {
			errs = append(errs, fmt.Errorf("conformance: %w", err))
		} else {
			errs = append(errs, rec.write(filepath.Join(out, "conformance.txtar"),
				fmt.Sprintf("Frames of the MCP conformance suite %s against the demo MCP fixture over streamable HTTP, recorded by internal/fuzzseed/record.", conformance.SuiteVersion)))
		}
	}
	return errors.Join(errs...)
}

// recorder keeps frames, deduplicated and bounded per group.
type recorder struct {
	mu       sync.Mutex
	sections []fuzzseed.Section
	seen     map[string]bool
	groups   map[string]int
}

func newRecorder() *recorder {
	return &recorder{seen: map[string]bool{}, groups: map[string]int{}}
}

// frame keeps one JSON-RPC message (or batch), classified by whether it has a method.
func (r *recorder) frame(b []byte) {
	b = bytes.TrimSpace(b)
	var m struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	kind, group := fuzzseed.MCPRequest, "batch"
	if json.Unmarshal(b, &m) == nil {
		switch {
		case m.Method != "":
			group = m.Method
		case m.Error != nil:
			kind, group = fuzzseed.MCPResponse, fmt.Sprint("error ", m.Error.Code)
		default:
			kind, group = fuzzseed.MCPResponse, "result "+shape(m.Result)
			r.toolResult(m.Result)
		}
	}
	r.keep(kind, group, b)
}

// toolResult keeps a result that is a tools/call result (it has content) as MCPResult too.
func (r *recorder) toolResult(res json.RawMessage) {
	var c struct {
		Content []struct {
			Type string `json:"type"`
		} `json:"content"`
	}
	if json.Unmarshal(res, &c) != nil || c.Content == nil {
		return
	}
	types := make([]string, 0, len(c.Content))
	for _, it := range c.Content {
		types = append(types, it.Type)
	}
	r.keep(fuzzseed.MCPResult, strings.Join(types, ","), res)
}

// shape names a result by its sorted top-level members.
func shape(res json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil {
		return "non-object"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

func (r *recorder) keep(kind fuzzseed.Kind, group string, b []byte) {
	if len(b) == 0 || len(b) > maxFrame || bytes.Contains(b, []byte("\n-- ")) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := string(kind) + "\x00" + string(b)
	g := string(kind) + "\x00" + group
	if r.seen[key] || r.groups[g] >= perGroup {
		return
	}
	r.seen[key] = true
	r.groups[g]++
	r.sections = append(r.sections, fuzzseed.Section{Name: fmt.Sprintf("%d %s", len(r.sections)+1, kind), Data: b})
}

func (r *recorder) write(name, comment string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sections) == 0 {
		return fmt.Errorf("%s: no frame recorded", name)
	}
	sayf("record: %s: %d frames\n", name, len(r.sections))
	return os.WriteFile(name, fuzzseed.FormatTxtar(comment, r.sections), 0o644)
}

// recordStdio drives an MCP server over stdio: initialize, the lists, every tool called with
// no arguments and with wrong ones, the resources read, and a few refused requests.
func recordStdio(rec *recorder, bin string) error {
	dir, err := os.MkdirTemp("", "fuzzseed-record-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("some notes\n"), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, dir) //nolint:gosec // bin is one of the pinned npm servers make mcp-servers installed; the filesystem server serves dir; the others ignore it or read it as the transport
	if strings.HasSuffix(bin, "everything") {
		cmd = exec.CommandContext(ctx, bin, "stdio")
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(dir, "memory.json"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()

	responses := make(chan json.RawMessage, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := slices.Clone(sc.Bytes())
			rec.frame(line)
			responses <- line
		}
		close(responses)
	}()
	id := 0
	call := func(method string, params any) json.RawMessage {
		wait := callWait
		if method == "initialize" {
			wait = 6 * callWait // npx and node start slowly on a loaded machine
		}
		id++
		msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
		if params != nil {
			msg["params"] = params
		}
		b, _ := json.Marshal(msg)
		rec.frame(b)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			return nil
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			select {
			case line, ok := <-responses:
				if !ok {
					return nil
				}
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal(line, &m) == nil && m.Method == "" && string(m.ID) == fmt.Sprint(id) {
					return m.Result
				}
			case <-timer.C:
				return nil
			}
		}
	}
	send := func(raw string) {
		rec.frame([]byte(raw))
		_, _ = io.WriteString(stdin, raw+"\n")
	}
	if call("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{"roots": map[string]any{"listChanged": true}},
		"clientInfo":      map[string]any{keyName: "gatehouse-fuzzseed-record", "version": "1"},
	}) == nil {
		return errors.New("no answer to initialize")
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call("ping", nil)
	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(call("tools/list", map[string]any{}), &tools)
	for _, t := range tools.Tools {
		call("tools/call", map[string]any{keyName: t.Name, keyArguments: map[string]any{}})
		call("tools/call", map[string]any{keyName: t.Name, keyArguments: map[string]any{"message": "hello", "a": 1, "b": 2, "path": filepath.Join(dir, "notes.txt"), "query": "x"}})
	}
	call("tools/call", map[string]any{keyName: "no_such_tool", keyArguments: map[string]any{}})
	call("prompts/list", map[string]any{})
	var res struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	_ = json.Unmarshal(call("resources/list", map[string]any{}), &res)
	for i, r := range res.Resources {
		if i >= 4 {
			break
		}
		call("resources/read", map[string]any{"uri": r.URI})
	}
	call("resources/templates/list", map[string]any{})
	call("no/such/method", map[string]any{})
	send(`{"jsonrpc":"2.0","id":"s-1","method":"tools/list","params":{"cursor":"not-a-cursor"}}`)
	send(`{"jsonrpc":"2.0","id":null,"method":"ping"}`)
	call("ping", nil) // waits for the answers of the two above
	return nil
}

// recordConformance runs the whole conformance suite against the demo MCP fixture through a
// loopback proxy that records every request body and every response body: JSON bodies as
// frames, event streams whole (SSE) and each event's data as a frame.
func recordConformance(rec *recorder, tools conformance.Tools) error {
	ctx, cancel := context.WithTimeout(context.Background(), suiteLimit)
	defer cancel()
	fixture, err := conformance.ServeFixture("127.0.0.1:0", demo.MCPOptions{})
	if err != nil {
		return err
	}
	defer func() {
		c, cl := context.WithTimeout(context.Background(), 5*time.Second)
		defer cl()
		_ = fixture.Close(c)
	}()
	target, err := url.Parse(fixture.URL)
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.FlushInterval = -1
	proxy.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &tee{ReadCloser: resp.Body, done: func(b []byte) { recordBody(rec, resp.Header.Get("Content-Type"), b) }}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		recordBody(rec, "application/json", body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	outDir, err := os.MkdirTemp("", "fuzzseed-conformance-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(outDir) }()
	results, err := tools.Run(ctx, conformance.RunOptions{URL: "http://" + ln.Addr().String() + conformance.FixturePath, OutDir: filepath.Join(outDir, "results")})
	if err != nil {
		return err
	}
	sayf("record: conformance: %d scenarios run\n", len(results))
	return nil
}

func recordBody(rec *recorder, contentType string, b []byte) {
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	if strings.HasPrefix(contentType, "text/event-stream") {
		// Streams are grouped by how many events they have, so that short and long ones are kept.
		rec.keep(fuzzseed.SSE, fmt.Sprint("events ", bytes.Count(b, []byte("\n\n"))), b)
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				rec.frame(data)
			}
		}
		return
	}
	rec.frame(b)
}

// tee passes a body through and hands what was read to done when it is closed.
type tee struct {
	io.ReadCloser
	buf  bytes.Buffer
	done func([]byte)
	once sync.Once
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.buf.Len() < 1<<20 {
		t.buf.Write(p[:n])
	}
	return n, err
}

func (t *tee) Close() error {
	t.once.Do(func() { t.done(t.buf.Bytes()) })
	return t.ReadCloser.Close()
}
