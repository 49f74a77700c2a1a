package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/*/*.txtar")

// Golden protocol tests: each testdata/<suite>/*.txtar holds exchanges N.send → N.spec /
// N.golden. N.spec is the expected response as its specification writes it (checked as a
// subset: the gateway may add error.data); N.golden is the gateway's exact response with
// the trace id normalized (rewritten by -update). Empty means no response at all.
// Every file is replayed over HTTP and over one WebSocket connection.
func TestGolden(t *testing.T) {
	files := jsonrpcGoldenFiles()
	if len(files) < 12 {
		t.Fatalf("found only %d golden files", len(files))
	}
	ts := start(t, baseConfig+goldenExtra, nil)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.ToSlash(file), ".txtar")[len("testdata/"):], func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			exchanges := parseExchanges(t, ar)
			for i, ex := range exchanges {
				status, hdr, body := ts.post(ex.send)
				checkHTTPStatus(t, ex, status, hdr, body)
				checkExchange(t, "http", ex, body)
				got := wsRoundTrip(t, dialWS(t, ts, nil), ex.send, strings.TrimSpace(ex.golden+ex.spec) != "")
				checkExchange(t, "websocket", ex, got)
				if *update {
					setSection(ar, strconv.Itoa(i+1)+".golden", normalize(body))
				}
			}
			if *update {
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// goldenExtra adds settings the gateway's own golden files rely on.
const goldenExtra = `
batch:
  max_size: 6
jsonrpc:
  max_depth: 8
  max_string_bytes: 64
`

type goldenExchange struct {
	n                  int
	send, spec, golden string
}

func parseExchanges(t *testing.T, ar *txtar.Archive) []goldenExchange {
	t.Helper()
	sections := map[string]string{}
	for _, f := range ar.Files {
		sections[f.Name] = string(f.Data)
	}
	var out []goldenExchange
	for n := 1; ; n++ {
		send, ok := sections[strconv.Itoa(n)+".send"]
		if !ok {
			break
		}
		out = append(out, goldenExchange{n: n, send: send, spec: sections[strconv.Itoa(n)+".spec"], golden: sections[strconv.Itoa(n)+".golden"]})
	}
	if len(out) == 0 {
		t.Fatal("no exchanges")
	}
	return out
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}

var traceRE = regexp.MustCompile(`"trace_id":"[0-9a-f]{32}"`)

// normalize replaces trace ids and ends with a newline, as txtar sections do.
func normalize(body string) string {
	if body == "" {
		return ""
	}
	return traceRE.ReplaceAllString(body, `"trace_id":"TRACE"`) + "\n"
}

func checkHTTPStatus(t *testing.T, ex goldenExchange, status int, hdr http.Header, body string) {
	t.Helper()
	wantStatus := http.StatusOK
	if strings.TrimSpace(ex.spec) == "" && strings.TrimSpace(ex.golden) == "" {
		wantStatus = http.StatusNoContent
	}
	if status != wantStatus {
		t.Errorf("exchange %d over http: status %d, want %d (body %s)", ex.n, status, wantStatus, body)
	}
	if status == http.StatusOK && hdr.Get("Content-Type") != "application/json" {
		t.Errorf("exchange %d: Content-Type %q", ex.n, hdr.Get("Content-Type"))
	}
	if len(hdr.Get("X-Trace-Id")) != 32 {
		t.Errorf("exchange %d: X-Trace-Id %q", ex.n, hdr.Get("X-Trace-Id"))
	}
}

func checkExchange(t *testing.T, face string, ex goldenExchange, got string) {
	t.Helper()
	if strings.TrimSpace(ex.spec) == "" {
		if got != "" {
			t.Errorf("exchange %d over %s: got %s, want no response", ex.n, face, got)
		}
	} else if !jsonSubset(t, ex.spec, got) {
		t.Errorf("exchange %d over %s:\n got %s\nwant (as a subset) %s", ex.n, face, got, ex.spec)
	}
	if !*update && normalize(got) != ex.golden {
		t.Errorf("exchange %d over %s differs from golden:\n got %s\nwant %s(run go test -update to accept)", ex.n, face, normalize(got), ex.golden)
	}
	if got != "" && !strings.Contains(got, `"error"`) == strings.Contains(got, "trace_id") {
		t.Errorf("exchange %d over %s: trace_id must appear exactly in error responses: %s", ex.n, face, got)
	}
}

// jsonSubset reports whether every member of want is in got with an equal value (objects
// may have more members in got; arrays must have the same length).
func jsonSubset(t *testing.T, want, got string) bool {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("spec section is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return false
	}
	return subset(w, g)
}

func subset(w, g any) bool {
	switch w := w.(type) {
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if gv, ok := gm[k]; !ok || !subset(v, gv) {
				return false
			}
		}
		return true
	case []any:
		ga, ok := g.([]any)
		if !ok || len(ga) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], ga[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(w, g)
	}
}

// dialWS opens a WebSocket to the test server.
func dialWS(t *testing.T, ts *testServer, header http.Header) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(ts.base, "http") + "/ws"
	c, resp, err := websocket.DefaultDialer.Dial(url, header)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wsRoundTrip sends msg followed by a marker request and returns the message msg
// produced, or "" when it produced none. Responses on one connection come as they complete,
// so the two may arrive in either order; when none is expected, a quiet period after the
// marker's response confirms it.
func wsRoundTrip(t *testing.T, c *websocket.Conn, msg string, expectResponse bool) string {
	t.Helper()
	const marker = `{"jsonrpc":"2.0","method":"get_data","id":"marker"}`
	for _, m := range []string{msg, marker} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	sawMarker := false
	for !sawMarker || (expectResponse && got == "") {
		m := wsRead(t, c, 5*time.Second)
		if strings.Contains(m, `"id":"marker"`) && !sawMarker && !strings.HasPrefix(m, "[") {
			sawMarker = true
			continue
		}
		if got != "" {
			t.Fatalf("a second response: %s", m)
		}
		got = m
	}
	if !expectResponse {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, extra, err := c.ReadMessage(); err == nil {
			t.Fatalf("unexpected message %s", extra)
		}
		// the read deadline broke the connection for reading; callers dial a new one
	}
	return got
}

// wsRead reads one message within timeout.
func wsRead(t *testing.T, c *websocket.Conn, timeout time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	return string(bytes.TrimSpace(b))
}
