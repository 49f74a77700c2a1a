package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// stdioLine is one message the stdio server wrote.
type stdioLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
	raw string
}

// stdioTalk writes lines to a stdio run and reads what it answers.
type stdioTalk struct {
	t     *testing.T
	run   *stdioRun
	lines chan stdioLine
}

func newStdioTalk(t *testing.T, run *stdioRun) *stdioTalk {
	st := &stdioTalk{t: t, run: run, lines: make(chan stdioLine, 256)}
	go func() {
		defer close(st.lines)
		sc := bufio.NewScanner(run.out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l stdioLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l.Method = "unreadable"
			}
			l.raw = sc.Text()
			st.lines <- l
		}
	}()
	return st
}

// ask writes line and returns the answer with id want (its JSON text), and the
// notifications written before it.
func (st *stdioTalk) ask(line, want string) (stdioLine, []stdioLine) {
	st.t.Helper()
	if _, err := io.WriteString(st.run.in, line+"\n"); err != nil {
		st.t.Fatal(err)
	}
	var notes []stdioLine
	timeout := time.After(testTimeout)
	for {
		select {
		case l, ok := <-st.lines:
			if !ok {
				st.t.Fatalf("stdout ended waiting for %s", want)
			}
			if want == "batch" && strings.HasPrefix(l.raw, "[") {
				return l, notes
			}
			if l.Method != "" {
				notes = append(notes, l)
				continue
			}
			if string(l.ID) == want {
				return l, notes
			}
			st.t.Fatalf("answer for %s while waiting for %s: %s", l.ID, want, l.raw)
		case <-timeout:
			st.t.Fatalf("no answer for %s", want)
		}
	}
}

// TestServeStdioNEKTEBesideMCP: over one stdio pipe, MCP lines reach mcp-go and the
// gateway's own methods (NEKTE's) go through its JSON-RPC pipeline as the local caller —
// interleaved, with the same ids, with nekte.delegate's events as $/event notifications,
// the pipeline's parse error for a line that is not JSON, batches, and the line limit.
func TestServeStdioNEKTEBesideMCP(t *testing.T) {
	const limit = 4096
	yaml := strings.Replace(faceConfig("127.0.0.1:0", "", ""), "routing:\n  demo: {}\n",
		fmt.Sprintf("nekte: {}\njsonrpc: {max_body_bytes: %d}\nrouting:\n  demo: {}\n  mcp:\n    servers:\n      - name: demo\n        http: {url: %q}\n",
			limit, demoUpstream(t, demo.MCPOptions{})), 1)
	st := newStdioTalk(t, serveStdio(t, yaml))

	if r, _ := st.ask(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}},"id":1}`, "1"); !strings.Contains(string(r.Result), `"gatehouse"`) {
		t.Fatalf("initialize: %s", r.raw)
	}
	if _, err := io.WriteString(st.run.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 2*limit)
	cases := []struct {
		name, line, id string
		want           string // in the result
		code           int    // the error's code instead
	}{
		{"nekte.discover", `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0},"id":2}`, "2", `"subtract"`, 0},
		{"tools/list", `{"jsonrpc":"2.0","method":"tools/list","id":2}`, "2", `"test_simple_text"`, 0},
		{"nekte.invoke", `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"subtract","in":{"minuend":5,"subtrahend":3}},"id":"i"}`, `"i"`, `2`, 0},
		{"tools/call", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"test_simple_text","arguments":{}},"id":3}`, "3", `"text"`, 0},
		{"a routed method unknown", `{"jsonrpc":"2.0","method":"no.such","id":4}`, "4", "", -32601},
		{"not JSON", `{"jsonrpc":"2.0","method":`, "null", "", -32700},
		{"over the limit", `{"jsonrpc":"2.0","id":5,"method":"nekte.invoke","params":{"cap":"subtract","in":{"pad":"` + pad + `"}}}`, "null", "", -32027},
		{"MCP over the limit still reaches mcp-go", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"test_simple_text","arguments":{"pad":"` + pad + `"}}}`, "6", `"text"`, 0},
		{"answered after the long line", `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"subtract","in":{"minuend":1,"subtrahend":1}},"id":7}`, "7", `0`, 0},
	}
	for _, c := range cases {
		r, _ := st.ask(c.line, c.id)
		switch {
		case c.code != 0 && (r.Error == nil || r.Error.Code != c.code):
			t.Errorf("%s: want error %d, got %s", c.name, c.code, r.raw)
		case c.code == 0 && (r.Error != nil || !strings.Contains(string(r.Result), c.want)):
			t.Errorf("%s: want a result with %s, got %s", c.name, c.want, r.raw)
		}
	}

	r, _ := st.ask(`[{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"subtract","in":{"minuend":9,"subtrahend":1}},"id":"b1"},{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0},"id":"b2"}]`, "batch")
	var batch []stdioLine
	if err := json.Unmarshal([]byte(r.raw), &batch); err != nil || len(batch) != 2 || batch[0].Error != nil || batch[1].Error != nil {
		t.Fatalf("batch: %s", r.raw)
	}

	r, notes := st.ask(`{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"stdio-1","desc":"subtract","timeout_ms":5000,"budget":{"max_tokens":50,"detail_level":"full"},"cap":"subtract","in":{"minuend":5,"subtrahend":3}}},"id":"del"}`, `"del"`)
	var events []string
	for _, n := range notes {
		var p struct {
			ID    json.RawMessage `json:"id"`
			Event string          `json:"event"`
		}
		if n.Method == "$/event" && json.Unmarshal(n.Params, &p) == nil && string(p.ID) == `"del"` {
			events = append(events, p.Event)
		}
	}
	if r.Error != nil || len(events) == 0 || events[len(events)-1] != "complete" ||
		string(r.Result) != fmt.Sprintf(`{"events":%d}`, len(events)) {
		t.Fatalf("delegate: events %v, answer %s", events, r.raw)
	}
}
