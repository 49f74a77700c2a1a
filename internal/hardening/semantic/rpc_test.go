package semantic

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// call is one generated JSON-RPC request: its body, headers, the id it was sent with
// ("" when the id cannot be echoed: a refused type), what it must get and, when the
// exchange ends before JSON-RPC, the HTTP status.
type call struct {
	body    string
	headers map[string]string
	id      string
	want    want
	status  int // 0: 200
}

// subtract is a valid request of the calculator with id and extra params members.
func subtract(id, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"calc.subtract","params":{"minuend":5,"subtrahend":3` + extra + `}}`
}

// rpcClasses are the classes of hostile single requests, each a generator of calls. They
// serve POST /rpc and (without the header classes) the WebSocket face.
func rpcClasses(e *env) []struct {
	name string
	make func() call
} {
	g := e.gen
	now := func() int64 { return time.Now().UnixMilli() }
	invalid := want{code: schemas.CodeInvalidRequest}
	return []struct {
		name string
		make func() call
	}{
		{"id/valid-any-type", func() call { id := g.ValidID(maxString); return call{body: subtract(id, ""), id: id} }},
		{"id/refused-type", func() call { return call{body: subtract(g.InvalidID(), ""), id: "null", want: invalid} }},
		{"id/string-at-limit", func() call {
			id := `"` + g.Padded(maxString) + `"`
			return call{body: subtract(id, ""), id: id}
		}},
		{"id/string-over-limit", func() call {
			return call{body: subtract(`"`+g.Padded(maxString+1)+`"`, ""), id: "null", want: want{schemas.CodeInvalidRequest, "max_string_bytes"}}
		}},
		{"method/injection", func() call {
			return call{body: `{"jsonrpc":"2.0","id":1,"method":"` + g.Injected("calc.subtract") + `","params":{"minuend":5,"subtrahend":3}}`,
				id: "1", want: want{code: schemas.CodeMethodNotFound}}
		}},
		{"method/not-utf8", func() call {
			return call{body: `{"jsonrpc":"2.0","id":1,"method":"calc.subtract` + g.Overlong() + `","params":{"minuend":5,"subtrahend":3}}`,
				id: "null", want: want{code: schemas.CodeParseError}} // JSON text is UTF-8
		}},
		{"params/unicode-strings", func() call {
			return call{body: `{"jsonrpc":"2.0","id":2,"method":"calc.sum","params":{"values":["x` + g.Content(maxString-1) + `"]}}`,
				id: "2", want: want{code: schemas.CodeInvalidParams}}
		}},
		{"params/unicode-member-name", func() call {
			return call{body: subtract("3", `,"`+g.Content(maxString)+`x":1`), id: "3", want: want{code: schemas.CodeInvalidParams}}
		}},
		{"params/depth-at-limit", func() call { // request 1, params 2, values 3…8
			return call{body: `{"jsonrpc":"2.0","id":4,"method":"calc.update","params":{"values":` + nest(maxDepth-2) + `}}`,
				id: "4", want: want{code: schemas.CodeInvalidParams}}
		}},
		{"params/depth-over-limit", func() call {
			return call{body: `{"jsonrpc":"2.0","id":4,"method":"calc.update","params":{"values":` + nest(maxDepth-1) + `}}`,
				id: "null", want: want{schemas.CodeInvalidRequest, "max_depth"}}
		}},
		{"params/deadline-malformed", func() call {
			return call{body: subtract("5", `,"deadline_ms":`+g.Deadline(DeadlineMalformed, now())), id: "5", want: want{code: schemas.CodeInvalidParams}}
		}},
		{"params/deadline-past", func() call {
			return call{body: subtract("6", `,"deadline_ms":`+g.Deadline(DeadlinePast, now())), id: "6", want: want{code: schemas.CodeDeadlineExceeded}}
		}},
		{"params/deadline-far", func() call {
			return call{body: subtract("7", `,"deadline_ms":`+g.Deadline(DeadlineFar, now())), id: "7"}
		}},
		{"body/at-limit", func() call { return call{body: pad(subtract("8", ""), maxBody), id: "8"} }},
	}
}

// httpClasses are the classes only HTTP has: the body's size and the deadline header.
func httpClasses(e *env) []struct {
	name string
	make func() call
} {
	g := e.gen
	now := func() int64 { return time.Now().UnixMilli() }
	return []struct {
		name string
		make func() call
	}{
		{"body/over-limit", func() call {
			return call{body: pad(subtract("9", ""), maxBody+1), id: "null", want: want{code: schemas.CodePayloadTooLarge}, status: http.StatusRequestEntityTooLarge}
		}},
		{"header/deadline-malformed", func() call {
			return call{body: subtract("10", ""), headers: map[string]string{"X-Deadline-Ms": g.DeadlineHeader(DeadlineMalformed, now())},
				id: "null", want: want{code: schemas.CodeInvalidRequest}, status: http.StatusBadRequest}
		}},
		{"header/deadline-past", func() call {
			return call{body: subtract("11", ""), headers: map[string]string{"X-Deadline-Ms": g.DeadlineHeader(DeadlinePast, now())},
				id: "11", want: want{code: schemas.CodeDeadlineExceeded}}
		}},
		{"header/deadline-far", func() call {
			return call{body: subtract("12", ""), headers: map[string]string{"X-Deadline-Ms": g.DeadlineHeader(DeadlineFar, now())}, id: "12"}
		}},
	}
}

// nest is n arrays nested around 1.
func nest(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }

// pad fills body with spaces (inside the object, where JSON allows them) to n bytes.
func pad(body string, n int) string {
	return body[:len(body)-1] + strings.Repeat(" ", n-len(body)) + "}"
}

// check runs the invariants on one answer of c; hits is the backend's calls it made.
func (e *env) check(class string, c call, status int, raw string, hits int64) {
	e.t.Helper()
	wantStatus := c.status
	if wantStatus == 0 {
		wantStatus = http.StatusOK
	}
	r, err := parseReply([]byte(raw))
	switch {
	case err != nil:
		e.t.Errorf("%s: %v: %.300s\n%.300s", class, err, raw, c.body)
	case status != wantStatus || !c.want.matches(r):
		e.t.Errorf("%s: got HTTP %d %.300s, want HTTP %d and %v\nsent %.300s %v", class, status, raw, wantStatus, c.want, c.body, c.headers)
	case c.id != "" && !sameID(c.id, r.ID):
		e.t.Errorf("%s: id %s answered as %s", class, c.id, r.ID)
	}
	if c.want.code != 0 && hits != 0 {
		e.t.Errorf("%s: a refused call reached the backend (%d hits): %.300s", class, hits, c.body)
	}
	if c.want.code == 0 && err == nil && r.Error == nil && hits != 1 {
		e.t.Errorf("%s: a served call made %d backend hits", class, hits)
	}
	e.count(class, r.outcome())
}

// TestRPC sends every class of hostile single request to POST /rpc.
func TestRPC(t *testing.T) {
	e := newEnv(t)
	classes := append(rpcClasses(e), httpClasses(e)...)
	keys := e.g.State.Len()
	n := hardening.Iterations(t, 600)
	for i := range n {
		cl := classes[i%len(classes)]
		c := cl.make()
		before := e.hits.Load()
		status, _, body := e.post("/rpc", c.body, c.headers)
		e.check(cl.name, c, status, body, e.hits.Load()-before)
		if e.tooMany() {
			break
		}
	}
	if got := e.g.State.Len(); got != keys {
		t.Errorf("state keys %d, before %d", got, keys)
	}
	headerLimit(e)
	e.finish()
}

// headerLimit sends requests whose header is exactly max_header_bytes long (served) and
// one byte longer (431), written by hand so that every byte is counted.
func headerLimit(e *env) {
	e.t.Helper()
	host := strings.TrimPrefix(e.g.Base, "http://")
	body := subtract("1", "")
	for _, tt := range []struct {
		size   int
		status int
	}{{maxHeader, http.StatusOK}, {maxHeader + 1, http.StatusRequestHeaderFieldsTooLarge}} {
		head := fmt.Sprintf("POST /rpc HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\nX-Pad: ", host, len(body))
		padLen := tt.size - len(head) - len("\r\n\r\n")
		req := head + e.gen.HeaderPad(padLen) + "\r\n\r\n" + body
		conn, err := net.DialTimeout("tcp", host, 10*time.Second)
		if err != nil {
			e.t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write([]byte(req)); err != nil {
			e.t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			e.t.Fatalf("header of %d bytes: %v", tt.size, err)
		}
		_ = resp.Body.Close()
		_ = conn.Close()
		if resp.StatusCode != tt.status {
			e.t.Errorf("header of %d bytes: HTTP %d, want %d", tt.size, resp.StatusCode, tt.status)
		}
		e.count("header/size-"+strconv.Itoa(tt.size-maxHeader), strconv.Itoa(resp.StatusCode))
	}
}
