package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/gatehouse-dev/gatehouse/demo"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"golang.org/x/tools/txtar"
)

var updateClient = flag.Bool("update-client", false, "rewrite testdata/client/*.txtar from what the client commands print")

// clientGateway starts the gateway the client tests call (testdata/client/gatehouse.yaml)
// and returns it with the environment that points the client commands at it. Its MCP
// upstream is the demo MCP server served by this test process over streamable HTTP, up
// before the gateway starts: the gateway's readiness waits on no child process.
func clientGateway(t *testing.T) (*process, []string) {
	t.Helper()
	p := startProcessEnv(t, filepath.Join("testdata", "client", "gatehouse.yaml"), []string{mcpURLEnv + "=" + serveDemoMCP(t)})
	base := strings.TrimSuffix(p.rpc, "/rpc")
	// /readyz is 200 only once every target was up: both answer now.
	for _, call := range []string{
		`{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":1}`,
		`{"jsonrpc":"2.0","method":"calc.subtract","params":{"minuend":2,"subtrahend":1},"id":2}`,
	} {
		if out, err := p.call(call); err != nil || !strings.Contains(out, `"result"`) {
			t.Fatalf("the ready gateway does not answer %s: %s %v", call, out, err)
		}
	}
	env := append(os.Environ(), envURL+"="+base, envAdminURL+"="+p.admin, "NO_COLOR=", envToken+"=", envAPIKey+"=")
	return p, env
}

// mcpURLEnv names the variable the test configurations read the demo MCP server's URL from.
const mcpURLEnv = "GATEHOUSE_TEST_MCP_URL"

// serveDemoMCP serves the demo MCP server (the fixtures `gatehouse demo-mcp` serves over
// stdio) over streamable HTTP on a port the kernel picks until the test ends, and returns
// its URL.
func serveDemoMCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	handler := demo.NewMCP(demo.MCPOptions{Logger: slog.New(slog.DiscardHandler)}).StreamableHTTPHandler(mcpserver.WithStreamableHTTPServer(hs))
	hs.Handler = handler
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := handler.Shutdown(ctx); err != nil {
			t.Errorf("demo MCP server shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("demo MCP server: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// cliRun is one run of the client binary.
type cliRun struct {
	stdout, stderr string
	code           int
}

// runCLI runs the gatehouse binary with args and env, stdin given, stdout and stderr pipes.
func runCLI(t *testing.T, env []string, stdin string, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliRun{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// normalizers take out what changes from run to run: trace ids, times, generated ids,
// ports.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-f]{64}\b`), "<digest>"},
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "<trace>"},
	{regexp.MustCompile(`"(ms|created_at|updated_at)":\d+`), `"$1":<n>`},
	{regexp.MustCompile(` in \d+ ms`), " in <n> ms"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "<time>"},
	{regexp.MustCompile(`\b[A-Z2-7]{26}\b`), "<approval>"},
	{regexp.MustCompile(`task_[0-9a-f]+_\d+`), "<session-task>"},
	{regexp.MustCompile(`rpc_[0-9a-f]{12}`), "<rpc-id>"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "<addr>"},
}

func normalize(s string) string {
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// transcript is what a golden section holds of a run.
func (r cliRun) transcript() string {
	var b strings.Builder
	b.WriteString(r.stdout)
	if r.stderr != "" {
		b.WriteString("--- stderr\n" + r.stderr)
	}
	fmt.Fprintf(&b, "--- exit %d\n", r.code)
	return normalize(b.String())
}

// golden compares sections with the txtar file name (or rewrites it with -update-client).
type golden struct {
	file     string
	want     map[string]string
	got      []txtar.File
	mu       sync.Mutex
	comments string
}

func loadGolden(t *testing.T, name, comment string) *golden {
	t.Helper()
	g := &golden{file: filepath.Join("testdata", "client", name), want: map[string]string{}, comments: comment}
	if a, err := txtar.ParseFile(g.file); err == nil {
		for _, f := range a.Files {
			g.want[f.Name] = string(f.Data)
		}
	} else if !*updateClient {
		t.Fatalf("%v (run with -update-client to create it)", err)
	}
	t.Cleanup(func() {
		if *updateClient && !t.Failed() {
			_ = os.WriteFile(g.file, txtar.Format(&txtar.Archive{Comment: []byte(g.comments), Files: g.got}), 0o600)
		}
	})
	return g
}

func (g *golden) check(t *testing.T, section, got string) {
	t.Helper()
	g.mu.Lock()
	g.got = append(g.got, txtar.File{Name: section, Data: []byte(got)})
	g.mu.Unlock()
	if *updateClient {
		return
	}
	if want, ok := g.want[section]; !ok {
		t.Errorf("%s: no section %q (run with -update-client)", g.file, section)
	} else if want != got {
		t.Errorf("%s: section %q\n--- got\n%s--- want\n%s", g.file, section, got, want)
	}
}

// TestClientGolden runs the client commands against a gateway with stdout a pipe (plain
// output: compact JSON, one line per event, no colour) and, for the tables, as on a
// terminal (--tty always --no-color), and compares what they print with
// testdata/client/pipe.txtar.
func TestClientGolden(t *testing.T) {
	p, env := clientGateway(t)
	g := loadGolden(t, "pipe.txtar", "What the client commands print, normalized (client_test.go: TestClientGolden).\nRewrite with: go test ./cmd/gatehouse/ -run TestClientGolden -update-client\n")
	dir := t.TempDir()
	params := filepath.Join(dir, "params.json")
	batch := filepath.Join(dir, "batch.jsonl")
	batchArray := filepath.Join(dir, "batch.json")
	_ = os.WriteFile(params, []byte(`{"minuend": 10, "subtrahend": 4}`), 0o600)
	_ = os.WriteFile(batch, []byte("# one request per line\n{\"method\":\"subtract\",\"params\":[5,3]}\n\n{\"method\":\"nosuch\"}\n{\"method\":\"notify_hello\",\"params\":[\"x\"],\"notification\":true}\n{\"method\":\"sum\",\"params\":[1,2,3],\"id\":\"s\"}\n"), 0o600)
	_ = os.WriteFile(batchArray, []byte(`[{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1},{"method":"subtract","params":{"minuend":1}}]`), 0o600)

	var approval string
	steps := []struct {
		name  string
		stdin string
		args  []string
		after func(r cliRun)
	}{
		{name: "call inline", args: []string{"call", "subtract", "[42,23]"}},
		{name: "call file", args: []string{"call", "subtract", "@" + params}},
		{name: "call stdin", stdin: `{"minuend":3,"subtrahend":5}`, args: []string{"call", "subtract", "-"}},
		{name: "call flags after", args: []string{"call", "calc.count", `{"from":1,"to":2}`, "--timeout", "10s"}},
		{name: "call ws", args: []string{"call", "--ws", "subtract", "[42,23]"}},
		{name: "call tty", args: []string{"call", "calc.count", `{"from":1,"to":2}`, "--tty", "always"}},
		{name: "call error", args: []string{"call", "subtract", `{"minuend":1}`}},
		{name: "call batch lines", args: []string{"call", "--batch", batch}},
		{name: "call batch ws", args: []string{"call", "--batch", batch, "--ws"}},
		{name: "call batch array", args: []string{"call", "--batch", batchArray}},
		{name: "call delegate events", args: []string{"call", "nekte.delegate", `{"task":{"id":"g-call","desc":"d","cap":"subtract","in":{"minuend":3,"subtrahend":1},"budget":{"max_tokens":100,"detail_level":"minimal"}}}`}},
		{name: "discover json", args: []string{"discover", "--level", "0", "--query", "subtract"}},
		{name: "discover table", args: []string{"discover", "--query", "progress", "--tty", "always", "--no-color"}},
		{name: "discover table level 2", args: []string{"discover", "--level", "2", "--category", "demo", "--query", "json schema", "--tty", "always", "--no-color"}},
		{name: "delegate progress", args: []string{"delegate", "test_tool_with_progress", "--id", "g-progress"}},
		{name: "delegate partials", args: []string{"delegate", "calc.count", "--in", `{"from":1,"to":3}`, "--id", "g-count"}},
		{name: "delegate fails", args: []string{"delegate", "test_error_handling", "--id", "g-fails"}},
		{name: "delegate refused", args: []string{"delegate", "nosuch", "--id", "g-refused"}},
		{name: "tasks status", args: []string{"tasks", "status", "g-count"}},
		{name: "tasks stream", args: []string{"tasks", "stream", "g-count"}},
		{name: "tasks cancel ended", args: []string{"tasks", "cancel", "g-count"}},
		{name: "tasks list", args: []string{"tasks", "list", "--status", "completed", "--tty", "always", "--no-color"}},
		{name: "operator cancel ended", args: []string{"operator", "cancel", "g-count", "--reason", "done already"}},
		{name: "chat", args: []string{"chat", "count", "count", "to", "three", "--options", `{"to":3}`}},
		{name: "chat events", args: []string{"chat", "count", "hello", "--options", `{"to":2}`, "--events"}},
		{name: "chat unknown route", args: []string{"chat", "nosuch", "hello"}},
		{name: "approval held", args: []string{"call", "update", `[1,{"k":"v"}]`}},
		{name: "approvals list", args: []string{"approvals", "list"}, after: func(r cliRun) {
			var l struct {
				Pending []struct {
					ID string `json:"id"`
				} `json:"pending"`
			}
			if json.Unmarshal([]byte(r.stdout), &l) != nil || len(l.Pending) != 1 {
				t.Fatalf("approvals list: %s", r.stdout)
			}
			approval = l.Pending[0].ID
		}},
		{name: "approvals list table", args: []string{"approvals", "list", "--tty", "always", "--no-color"}},
		{name: "approvals approve", args: []string{"approvals", "approve", "{approval}", "--note", "change 4711"}},
		{name: "approvals approve again", args: []string{"approvals", "approve", "{approval}"}},
		{name: "approvals list all", args: []string{"approvals", "list", "--all", "--tty", "always", "--no-color"}},
		{name: "revocations add", args: []string{"revocations", "add", "--sub", "mallory", "--ttl", "1h", "--reason", "test"}},
		{name: "revocations list", args: []string{"revocations", "list", "--tty", "always", "--no-color"}},
		{name: "revocations remove", args: []string{"revocations", "remove", "--sub", "mallory"}},
		{name: "revocations list empty", args: []string{"revocations", "list", "--tty", "always"}},
		{name: "keys list without scope", args: []string{"keys", "list"}},
	}
	for _, s := range steps {
		args := make([]string, len(s.args))
		for i, a := range s.args {
			args[i] = strings.ReplaceAll(a, "{approval}", approval)
		}
		r := runCLI(t, env, s.stdin, args...)
		if strings.Contains(r.stdout+r.stderr, "\x1b") {
			t.Errorf("%s: escape codes in a pipe or with --no-color: %q", s.name, r.stdout+r.stderr)
		}
		g.check(t, s.name, strings.ReplaceAll("$ gatehouse "+strings.Join(s.args, " ")+"\n"+r.transcript(), dir, "$DIR"))
		if s.after != nil {
			s.after(r)
		}
	}
	if approval == "" {
		t.Fatal("no approval was listed")
	}
	// The approved call runs when redeemed, once.
	out, _ := p.call(`{"jsonrpc":"2.0","method":"approvals.redeem","params":{"approval_id":"` + approval + `"},"id":1}`)
	if !strings.Contains(out, `"result"`) {
		t.Errorf("redeeming the approved call: %s", out)
	}
}

// TestClientExitCodes: each class of error has its exit code (docs/cli.md), whatever the
// command.
func TestClientExitCodes(t *testing.T) {
	p, _ := clientGateway(t)
	base := strings.TrimSuffix(p.rpc, "/rpc")
	notRPC := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>a proxy's page</html>")
	}))
	defer notRPC.Close()
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client hanging up
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer silent.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"ok", []string{"call", "subtract", "[2,1]"}, 0, ""},
		{"ok over ws", []string{"call", "subtract", "[2,1]", "--ws"}, 0, ""},
		{"ok with api key", []string{"call", "subtract", "[2,1]", "--api-key", "cli-test-key"}, 0, ""},
		{"ok with api key as bearer", []string{"call", "subtract", "[2,1]", "--token", "cli-test-key"}, 0, ""},
		{"usage: no method", []string{"call"}, 2, "usage: gatehouse call"},
		{"usage: params not JSON", []string{"call", "subtract", "[2,"}, 2, "not valid JSON"},
		{"usage: params a number", []string{"call", "subtract", "7"}, 2, "object or array"},
		{"usage: missing file", []string{"call", "subtract", "@/nonexistent/params.json"}, 2, "no such file"},
		{"usage: bad flag", []string{"call", "subtract", "--frobnicate"}, 2, "frobnicate"},
		{"usage: bad tty", []string{"call", "subtract", "--tty", "sometimes"}, 2, "--tty"},
		{"usage: bad url", []string{"call", "subtract", "--url", "ftp://x"}, 2, "bad gateway URL"},
		{"usage: batch and method", []string{"call", "--batch", "x", "subtract"}, 2, "no METHOD"},
		{"usage: discover level", []string{"discover", "--level", "3"}, 2, "--level"},
		{"usage: unknown action", []string{"approvals", "frob"}, 2, `unknown action "frob"`},
		{"usage: revocation without subject", []string{"revocations", "add"}, 2, "--jti"},
		{"transport: refused", []string{"call", "subtract", "[2,1]", "--url", "127.0.0.1:1"}, 3, "connection refused"},
		{"transport: refused ws", []string{"call", "subtract", "[2,1]", "--url", "127.0.0.1:1", "--ws"}, 3, "connection refused"},
		{"transport: not JSON-RPC", []string{"call", "subtract", "[2,1]", "--url", notRPC.URL}, 3, "not a JSON-RPC response"},
		{"transport: admin refused", []string{"approvals", "list", "--admin-url", "127.0.0.1:1"}, 3, "connection refused"},
		{"auth: unknown token", []string{"call", "subtract", "[2,1]", "--token", "not-a-key"}, 4, "4001 AUTHENTICATION_FAILED"},
		{"auth: unknown api key over ws", []string{"call", "subtract", "[2,1]", "--api-key", "not-a-key", "--ws"}, 4, "4001"},
		{"auth: approval pending", []string{"call", "update", `[1,{"a":1}]`}, 4, "4004 APPROVAL_PENDING"},
		{"auth: missing scope", []string{"keys", "list"}, 4, "4002 INSUFFICIENT_SCOPE"},
		{"invalid: unknown method", []string{"call", "nosuch"}, 5, "-32601"},
		{"invalid: params", []string{"call", "subtract", `{"minuend":1}`}, 5, "-32602"},
		{"invalid: unknown capability", []string{"delegate", "nosuch"}, 5, "-32002"},
		{"invalid: unknown task", []string{"tasks", "status", "nosuch"}, 5, "-32009"},
		{"invalid: unknown approval", []string{"approvals", "deny", "nosuch"}, 5, "unknown_id"},
		{"invalid: unknown session route", []string{"chat", "nosuch", "hi"}, 5, "unknown_route"},
		{"unavailable: deadline", []string{"call", "calc.count", `{"from":1,"to":50,"interval":"0.1s"}`, "--timeout", "300ms"}, 6, ""},
		{"unavailable: client timeout", []string{"call", "subtract", "[2,1]", "--url", silent.URL, "--timeout", "200ms"}, 6, "no answer within --timeout 200ms"},
		{"other: tool failed", []string{"call", "mcp.test_error_handling"}, 1, "1001 TOOL_FAILED"},
		{"other: task failed", []string{"delegate", "test_error_handling"}, 1, "-32007"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			switch {
			case strings.Contains(strings.Join(args, " "), "-url"):
			case args[0] == "approvals" || args[0] == "revocations" || args[0] == "keys":
				args = append(slicesClone(args), "--admin-url", p.admin)
			default:
				args = append(slicesClone(args), "--url", base)
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, tt.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.stderr)
			}
		})
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// terminal replays what a program wrote to a terminal and returns the screen's lines as
// a person would read them: carriage returns go back to the line's start, erase-line
// sequences clear it, colour (SGR) sequences are dropped.
func terminal(out string) string {
	var lines [][]rune
	row, col := 0, 0
	line := func() []rune {
		for len(lines) <= row {
			lines = append(lines, nil)
		}
		return lines[row]
	}
	rs := []rune(out)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\r':
			col = 0
		case '\n':
			row, col = row+1, 0
			line()
		case 0x1b:
			j := i + 1
			if j < len(rs) && rs[j] == '[' {
				j++
				for j < len(rs) && (rs[j] < 0x40 || rs[j] > 0x7e) {
					j++
				}
				if j < len(rs) && rs[j] == 'K' {
					l := line()
					if strings.HasPrefix(string(rs[i+2:j]), "2") {
						lines[row] = nil
					} else if col < len(l) {
						lines[row] = l[:col]
					}
				}
			}
			i = j
		default:
			l := line()
			for len(l) < col {
				l = append(l, ' ')
			}
			if col < len(l) {
				l[col] = r
			} else {
				l = append(l, r)
			}
			lines[row] = l
			col++
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimRight(string(l), " ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// runPTY runs the binary on a pseudo-terminal (stdin, stdout and stderr) and returns all
// it wrote; onOutput, when set, sees the output so far and may write to the terminal.
func runPTY(t *testing.T, env []string, onOutput func(soFar string, tty *os.File) bool, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tty.Close() }()
	var out bytes.Buffer
	buf := make([]byte, 4096)
	fired := onOutput == nil
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for {
		n, err := tty.Read(buf)
		out.Write(buf[:n])
		if !fired && onOutput(out.String(), tty) {
			fired = true
		}
		if err != nil { // EIO once the program has exited and the terminal has no writer
			break
		}
	}
	werr := cmd.Wait()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](werr); ok {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	return out.String(), code
}

// TestClientProgressPTY runs delegate on a pseudo-terminal: a progress bar that fills as
// the backend reports progress, the partial results printed above it, colour, and the
// result as indented JSON; the screen it leaves is compared with testdata/client/tty.txtar.
func TestClientProgressPTY(t *testing.T) {
	_, env := clientGateway(t)
	g := loadGolden(t, "tty.txtar", "The screen the client commands leave on a terminal (client_test.go: TestClientProgressPTY).\nRewrite with: go test ./cmd/gatehouse/ -run TestClientProgressPTY -update-client\n")
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"delegate progress", []string{"delegate", "test_tool_with_progress", "--id", "p-progress"}},
		{"delegate partials", []string{"delegate", "calc.count", "--in", `{"from":1,"to":4,"interval":"0.05s"}`, "--id", "p-count"}},
		{"delegate fails", []string{"delegate", "test_error_handling", "--id", "p-fails"}},
		{"call", []string{"call", "subtract", "[42,23]"}},
		{"chat", []string{"chat", "count", "go", "--options", `{"to":3}`}},
		{"discover", []string{"discover", "--query", "progress"}},
	} {
		out, code := runPTY(t, env, nil, tt.args...)
		if strings.HasPrefix(tt.name, "delegate") && !strings.Contains(out, "\x1b[") {
			t.Errorf("%s: no colour on a terminal: %q", tt.name, out)
		}
		if tt.name == "delegate progress" && !strings.Contains(out, "50%") {
			t.Errorf("the bar was never drawn half full: %q", out)
		}
		g.check(t, tt.name, fmt.Sprintf("$ gatehouse %s\n%s--- exit %d\n", strings.Join(tt.args, " "), normalize(terminal(out)), code))
	}
}

// TestClientInterruptCancelsTask: Ctrl-C on a terminal (the ^C the terminal turns into
// SIGINT) and SIGINT to a delegate in a pipe both send nekte.task.cancel: the stream shows
// the cancellation, the command exits 130 and the task is cancelled on the gateway.
func TestClientInterruptCancelsTask(t *testing.T) {
	p, env := clientGateway(t)
	status := func(id string) string {
		out, _ := p.call(`{"jsonrpc":"2.0","method":"nekte.task.status","params":{"task_id":"` + id + `"},"id":1}`)
		var r struct {
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(out), &r)
		return r.Result.Status
	}
	slow := `{"from":1,"to":600,"interval":"0.1s"}`

	t.Run("terminal", func(t *testing.T) {
		out, code := runPTY(t, env, func(soFar string, tty *os.File) bool {
			if strings.Count(soFar, "partial") < 2 {
				return false
			}
			_, _ = tty.Write([]byte{3}) // ^C
			return true
		}, "delegate", "calc.count", "--in", slow, "--id", "int-tty")
		screen := terminal(out)
		if code != 130 || !strings.Contains(screen, "interrupted: cancelling task int-tty") ||
			!strings.Contains(screen, "cancelled int-tty (was running): interrupted on the command line") {
			t.Fatalf("exit %d, screen:\n%s", code, screen)
		}
		if s := status("int-tty"); s != "cancelled" {
			t.Fatalf("task int-tty is %q, want cancelled", s)
		}
	})

	t.Run("pipe", func(t *testing.T) {
		cmd := exec.Command(binary, "delegate", "calc.count", "--in", slow, "--id", "int-pipe")
		cmd.Env = env
		stdout := &lockedBuffer{}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return strings.Count(stdout.String(), "partial") >= 2 })
		_ = cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		ee, ok := errors.AsType[*exec.ExitError](err)
		if !ok || ee.ExitCode() != 130 {
			t.Fatalf("exit %v; stderr %s", err, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, `cancelled {"task_id":"int-pipe","reason":"interrupted on the command line","previous_status":"running"}`) {
			t.Fatalf("last line %q", last)
		}
		if !strings.Contains(stderr.String(), "interrupted: cancelling task int-pipe") {
			t.Errorf("stderr %q", stderr.String())
		}
		if s := status("int-pipe"); s != "cancelled" {
			t.Fatalf("task int-pipe is %q, want cancelled", s)
		}
	})
}
