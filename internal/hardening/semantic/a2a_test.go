package semantic

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
)

// a2aSend is a SendMessage (the 1.0 binding) of skill with parts.
func a2aSend(messageID, skill, parts string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + messageID +
		`","role":"ROLE_USER","parts":[` + parts + `],"metadata":{"skill":"` + skill + `"}}}}`
}

const subtractPart = `{"data":{"minuend":5,"subtrahend":3}}`

// TestA2A sends hostile A2A calls to POST /a2a: injected skills and task ids, unicode
// message ids, parts past a2a.max_parts, bodies at a2a.max_message_bytes ± 1 and
// malformed deadlines. Errors are A2A's (its JSON-RPC codes, google.rpc details as data).
func TestA2A(t *testing.T) {
	e := newEnv(t)
	g := e.gen
	type a2aCall struct {
		body    string
		headers map[string]string
		code    int // 0: a completed task
		status  int
	}
	classes := []struct {
		name string
		make func() a2aCall
	}{
		{"message-id/unicode", func() a2aCall { return a2aCall{body: a2aSend("m"+g.Content(64), "calc.subtract", subtractPart)} }},
		{"skill/injection", func() a2aCall {
			return a2aCall{body: a2aSend("m1", g.Injected("calc.subtract"), subtractPart), code: -32602}
		}},
		{"get-task/id-injection", func() a2aCall {
			return a2aCall{body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + g.Injected("a2a-x") + `"}}`, code: -32001}
		}},
		{"cancel-task/id-injection", func() a2aCall {
			return a2aCall{body: `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"` + g.Injected("a2a-x") + `"}}`, code: -32001}
		}},
		{"parts/over-limit", func() a2aCall {
			return a2aCall{body: a2aSend("m2", "calc.subtract", strings.Repeat(subtractPart+",", maxA2AParts)+subtractPart), code: -32602}
		}},
		{"body/at-limit", func() a2aCall { return a2aCall{body: pad(a2aSend("m3", "calc.subtract", subtractPart), maxA2AMessage)} }},
		{"body/over-limit", func() a2aCall {
			return a2aCall{body: pad(a2aSend("m4", "calc.subtract", subtractPart), maxA2AMessage+1), code: -32600}
		}},
		{"header/deadline-malformed", func() a2aCall {
			return a2aCall{body: a2aSend("m5", "calc.subtract", subtractPart), headers: map[string]string{"X-Deadline-Ms": g.DeadlineHeader(DeadlineMalformed, time.Now().UnixMilli())},
				code: -32600, status: http.StatusBadRequest}
		}},
	}
	n := hardening.Iterations(t, 240)
	for i := range n {
		cl := classes[i%len(classes)]
		c := cl.make()
		h := map[string]string{"A2A-Version": "1.0"}
		maps.Copy(h, c.headers)
		before, keys := e.hits.Load(), e.g.State.Len()
		status, _, body := e.post("/a2a", c.body, h)
		hits := e.hits.Load() - before
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			} `json:"error"`
		}
		wantStatus := c.status
		if wantStatus == 0 {
			wantStatus = http.StatusOK
		}
		err := json.Unmarshal([]byte(body), &r)
		outcome := "ok"
		switch {
		case err != nil || r.JSONRPC != "2.0" || (r.Result == nil) == (r.Error == nil) || status != wantStatus:
			t.Errorf("%s: not a well-formed answer: HTTP %d %.400s", cl.name, status, body)
		case c.code == 0 && (r.Error != nil || !strings.Contains(string(r.Result), "TASK_STATE_COMPLETED") || hits != 1):
			t.Errorf("%s: want a completed task with one backend hit, got %d hits: %.400s", cl.name, hits, body)
		case c.code != 0 && (r.Error == nil || r.Error.Code != c.code || r.Error.Message == "" || len(r.Error.Data) == 0):
			t.Errorf("%s: want error %d, got %.400s", cl.name, c.code, body)
		}
		if r.Error != nil {
			outcome = strings.TrimSpace(string(json.RawMessage(jsonInt(r.Error.Code))))
		}
		if c.code != 0 && (hits != 0 || e.g.State.Len() > keys) {
			t.Errorf("%s: a refused call made %d backend hits and added %d state keys", cl.name, hits, e.g.State.Len()-keys)
		}
		e.count("a2a/"+cl.name, outcome)
		if e.tooMany() {
			break
		}
	}
	e.finish()
}

func jsonInt(n int) []byte { b, _ := json.Marshal(n); return b }
