package mcpbackend_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// serveEverythingHTTP runs server-everything's streamable HTTP mode on 127.0.0.1 and
// returns its /mcp URL. The server binds every interface unless told otherwise, and has
// no option to: testdata/loopback.cjs, preloaded, makes it listen on loopback only.
func serveEverythingHTTP(t *testing.T) string {
	t.Helper()
	bin := npmServer(t, "mcp-server-everything")
	script, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	preload, err := filepath.Abs("testdata/loopback.cjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "-r", preload, script, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				port <- p
			}
		}
	}()
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p + "/mcp"
	case <-time.After(20 * time.Second):
		t.Fatal("server-everything did not start listening")
		return ""
	}
}

func TestEverything(t *testing.T) {
	transports := []struct {
		name string
		cfg  func(t *testing.T) mcpbackend.Config
	}{
		{"stdio", func(t *testing.T) mcpbackend.Config {
			return mcpbackend.Config{Stdio: &mcpbackend.StdioConfig{Command: npmServer(t, "mcp-server-everything"), Args: []string{"stdio"}}}
		}},
		{"streamable_http", func(t *testing.T) mcpbackend.Config {
			return mcpbackend.Config{HTTP: &mcpbackend.HTTPConfig{URL: serveEverythingHTTP(t)}}
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.cfg(t)
			cfg.Name = "everything"
			cfg.Names.Mode = mcpbackend.PrefixAlways
			b, _ := start(t, []mcpbackend.Config{fast(cfg)})
			testEverything(t, b)
		})
	}
}

func testEverything(t *testing.T, b *mcpbackend.Bridge) {
	ctx := ctxTimeout(t, 20*time.Second)
	cat := b.Catalog()
	if st := b.Status()[0]; st.ProtocolVersion != "2025-11-25" {
		t.Fatalf("negotiated %+v", st)
	}
	for _, list := range []struct {
		entries []mcpbackend.Entry
		want    string
	}{
		{cat.Tools, "everything__echo"},
		{cat.Tools, "everything__get-sum"},
		{cat.Prompts, "everything__args-prompt"},
		{cat.Resources, "demo://resource/static/document/features.md"},
		{cat.ResourceTemplates, "demo://resource/dynamic/text/{resourceId}"},
	} {
		if !hasName(list.entries, list.want) {
			t.Fatalf("%s missing from %v", list.want, names(list.entries))
		}
	}
	if got := callText(t, b, "everything__echo", `{"message":"hi"}`); got != "Echo: hi" {
		t.Fatalf("echo = %q", got)
	}
	if got := callText(t, b, "everything__get-sum", `{"a":2,"b":40}`); !strings.Contains(got, "42") {
		t.Fatalf("get-sum = %q", got)
	}
	res, err := b.ReadResource(ctx, "demo://resource/dynamic/text/7")
	if err != nil || !strings.Contains(string(res), "Resource 7") {
		t.Fatalf("template read = %s, %v", res, err)
	}
	if res, err = b.ReadResource(ctx, "demo://resource/static/document/features.md"); err != nil || !strings.Contains(string(res), "Everything Server") {
		t.Fatalf("static read: %v", err)
	}
	res, err = b.GetPrompt(ctx, "everything__args-prompt", json.RawMessage(`{"city":"Lyon"}`))
	if err != nil || !strings.Contains(string(res), "Lyon") {
		t.Fatalf("prompt = %s, %v", res, err)
	}
	// Progress from a real server.
	var mu sync.Mutex
	var steps int
	pctx := mcpbackend.WithProgress(ctx, func(mcpbackend.Progress) { mu.Lock(); steps++; mu.Unlock() })
	if _, err := b.CallTool(pctx, "everything__trigger-long-running-operation", json.RawMessage(`{"duration":0.3,"steps":3}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if steps != 3 {
		t.Errorf("%d progress notifications, want 3", steps)
	}
	mu.Unlock()
	// The server advertises resources.subscribe.
	if err := b.Subscribe(ctx, "demo://resource/static/document/features.md"); err != nil {
		t.Fatal(err)
	}
	if err := b.Unsubscribe(ctx, "demo://resource/static/document/features.md"); err != nil {
		t.Fatal(err)
	}
	// gzip-file-as-resource registers a session resource: resources/list_changed.
	events := make(chan mcpbackend.Event, 16)
	defer b.OnEvent(func(e mcpbackend.Event) { nonBlocking(events, e) })()
	callText(t, b, "everything__gzip-file-as-resource", `{"name":"hello.txt","data":"data:text/plain;base64,aGVsbG8=","outputType":"resourceLink"}`)
	want := "demo://resource/session/hello.txt"
	for {
		select {
		case e := <-events:
			if strings.Join(e.Delta.Resources.Added, ",") == want {
				if res, err := b.ReadResource(ctx, want); err != nil {
					t.Fatalf("reading the new resource: %s %v", res, err)
				}
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no delta adding %s; resources: %v", want, names(b.Catalog().Resources))
		}
	}
}

func TestFilesystemConfined(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	outside := t.TempDir()
	cfg := fast(mcpbackend.Config{Name: "fs", Stdio: &mcpbackend.StdioConfig{Command: npmServer(t, "mcp-server-filesystem"), Args: []string{dir}},
		Roots: []mcpbackend.RootConfig{{URI: "file://" + dir, Name: "work"}}})
	b, _ := start(t, []mcpbackend.Config{cfg})
	file := filepath.Join(dir, "note.txt")
	args, _ := json.Marshal(map[string]string{"path": file, "content": "written through the gateway"})
	callText(t, b, "write_file", string(args))
	args, _ = json.Marshal(map[string]string{"path": file})
	if got := callText(t, b, "read_text_file", string(args)); got != "written through the gateway" {
		t.Fatalf("read back %q", got)
	}
	args, _ = json.Marshal(map[string]string{"path": filepath.Join(outside, "x.txt"), "content": "no"})
	res, err := b.CallTool(ctxTimeout(t, 10*time.Second), "write_file", args)
	if err != nil || !strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("a write outside the allowed directory: %s %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Fatal("the server wrote outside its directory")
	}
}

func TestMemorySubscription(t *testing.T) {
	cfg := fast(mcpbackend.Config{Name: "memory", Stdio: &mcpbackend.StdioConfig{Command: npmServer(t, "mcp-server-memory"),
		Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}})
	b, _ := start(t, []mcpbackend.Config{cfg})
	ctx := ctxTimeout(t, 10*time.Second)
	const uri = "memory://knowledge-graph"
	updates := make(chan mcpbackend.Event, 16)
	defer b.OnEvent(func(e mcpbackend.Event) {
		if e.Kind == mcpbackend.EventResourceUpdated {
			nonBlocking(updates, e)
		}
	})()
	if err := b.Subscribe(ctx, uri); err != nil {
		t.Fatal(err)
	}
	callText(t, b, "create_entities", `{"entities":[{"name":"Ada","entityType":"person","observations":["wrote the first program"]}]}`)
	select {
	case e := <-updates:
		if e.URI != uri || e.Upstream != "memory" {
			t.Fatalf("update %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/updated relayed")
	}
	res, err := b.ReadResource(ctx, uri)
	if err != nil || !strings.Contains(string(res), "wrote the first program") {
		t.Fatalf("read = %s, %v", res, err)
	}
	if err := b.Unsubscribe(ctx, uri); err != nil {
		t.Fatal(err)
	}
}

func TestSubscribeRespectsCapabilities(t *testing.T) {
	// The fixture lists resources but does not advertise resources.subscribe.
	cfg := fixture("fx", map[string]string{"FIXTURE_RESOURCES": "1"})
	b, _ := start(t, []mcpbackend.Config{cfg})
	err := b.Subscribe(ctxTimeout(t, 5*time.Second), "res://fx/item/1")
	if codeOf(err) != schemas.CodeMethodNotFound {
		t.Fatalf("subscribe to a server without the capability: %v", err)
	}
}
