package semantic

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestNEKTE sends hostile nekte.* calls: negative, huge and mistyped budgets, injected
// capability and task ids, negative task timeouts and impossible deadlines. A refused
// call reaches no backend and leaves the state store as it was (no task recorded).
func TestNEKTE(t *testing.T) {
	e := newEnv(t)
	g := e.gen
	in := `"in":{"minuend":5,"subtrahend":3}`
	classes := []struct {
		name string
		make func() call
	}{
		{"invoke/budget", func() call {
			v, ok := g.Budget()
			c := call{body: `{"jsonrpc":"2.0","id":1,"method":"nekte.invoke","params":{"cap":"calc.subtract",` + in + `,"budget":{"max_tokens":` + v + `,"detail_level":"full"}}}`, id: "1"}
			if !ok {
				c.want = want{code: schemas.CodeInvalidParams}
			}
			return c
		}},
		{"invoke/cap-injection", func() call { // within the 64 characters of an id
			capID := g.Injected("calc.subtract")
			for chars(capID) > 64 {
				capID = g.Injected("calc.subtract")
			}
			return call{body: `{"jsonrpc":"2.0","id":2,"method":"nekte.invoke","params":{"cap":"` + capID + `",` + in + `}}`,
				id: "2", want: want{code: schemas.CodeCapabilityNotFound}}
		}},
		{"invoke/cap-at-limit", func() call {
			return call{body: `{"jsonrpc":"2.0","id":2,"method":"nekte.invoke","params":{"cap":"calc.` + strings.Repeat("é", 59) + `",` + in + `}}`,
				id: "2", want: want{code: schemas.CodeCapabilityNotFound}}
		}},
		{"invoke/cap-over-limit", func() call {
			return call{body: `{"jsonrpc":"2.0","id":2,"method":"nekte.invoke","params":{"cap":"calc.` + strings.Repeat("é", 60) + `",` + in + `}}`,
				id: "2", want: want{code: schemas.CodeInvalidParams}}
		}},
		{"invoke/deadline-past", func() call {
			return call{body: `{"jsonrpc":"2.0","id":3,"method":"nekte.invoke","params":{"cap":"calc.subtract",` + in + `,"deadline_ms":` +
				g.Deadline(DeadlinePast, time.Now().UnixMilli()) + `}}`, id: "3", want: want{code: schemas.CodeDeadlineExceeded}}
		}},
		{"task.status/id-injection", func() call {
			return call{body: `{"jsonrpc":"2.0","id":4,"method":"nekte.task.status","params":{"task_id":"` + g.Injected("t-1") + `"}}`,
				id: "4", want: want{code: schemas.CodeTaskNotFound}}
		}},
		{"task.cancel/id-injection", func() call {
			return call{body: `{"jsonrpc":"2.0","id":5,"method":"nekte.task.cancel","params":{"task_id":"` + g.Injected("t-1") + `"}}`,
				id: "5", want: want{code: schemas.CodeTaskNotFound}}
		}},
		{"delegate/timeout-negative", func() call {
			return call{body: `{"jsonrpc":"2.0","id":6,"method":"nekte.delegate","params":{"task":{"id":"t-` + g.Content(16) + `","desc":"x","timeout_ms":` +
				pick(g, []string{`-1`, `-9007199254740993`, `-1e308`}) + `,"cap":"calc.subtract",` + in + `}}}`, id: "6", want: want{code: schemas.CodeInvalidParams}}
		}},
		{"delegate/budget-refused", func() call {
			v, ok := "", true
			for ok {
				v, ok = g.Budget()
			}
			return call{body: `{"jsonrpc":"2.0","id":7,"method":"nekte.delegate","params":{"task":{"id":"t-x","desc":"x","timeout_ms":5000,"budget":{"max_tokens":` +
				v + `,"detail_level":"full"},"cap":"calc.subtract",` + in + `}}}`, id: "7", want: want{code: schemas.CodeInvalidParams}}
		}},
	}
	n := hardening.Iterations(t, 300)
	for i := range n {
		cl := classes[i%len(classes)]
		c := cl.make()
		before, keys := e.hits.Load(), e.g.State.Len()
		status, _, body := e.post("/rpc", c.body, nil)
		e.check(cl.name, c, status, body, e.hits.Load()-before)
		if c.want.code != 0 && e.g.State.Len() > keys { // records of earlier tasks may expire meanwhile
			t.Errorf("%s: a refused call added to the state store: %d keys, %d before", cl.name, e.g.State.Len(), keys)
		}
		if e.tooMany() {
			break
		}
	}
	e.finish()
}

// chars is the length in characters of JSON string content.
func chars(content string) int {
	var s string
	if json.Unmarshal([]byte(`"`+content+`"`), &s) != nil {
		return len(content)
	}
	return utf8.RuneCountInString(s)
}
