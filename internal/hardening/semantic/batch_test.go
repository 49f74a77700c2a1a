package semantic

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// member is one generated batch member: its id's key (the value it denotes) and the keys
// of the members it names in depends_on, each written in some form that denotes it.
type member struct {
	key  string
	id   string   // JSON text
	refs []string // keys
	deps string   // JSON text of depends_on, "" for none
}

// idForms are ids with other spellings of the same value: a reference may use any.
var idForms = [][]string{
	{`1`, `1.0`, `1e0`, `10e-1`}, {`2`, `2.00`, `0.2e1`}, {`-1`, `-1.0`, `-1e0`}, {`0`, `-0`, `0e5`},
	{`9007199254740993`, `9007199254740993.0`}, {`9007199254740992`},
	{`"a"`, `"\u0061"`}, {`"1"`, `"\u0031"`}, {`"\ud800"`, `"\udbff"`}, {`"é"`, `"\u00e9"`}, {`"\u202e"`, "\"\u202e\""},
}

// missingRefs are references no generated member has: a string never equals a number,
// and 2^53+1 is not 2^53.
var missingRefs = []string{`"2"`, `3`, `"b"`, `9007199254740994`, `1.5`, `"A"`, `"\u0000"`, `"../1"`}

// genBatch makes a batch of n members over distinct or repeated ids with a random
// depends_on graph (self references, cycles, missing and ambiguous ids included).
func genBatch(g Gen, n int) []member {
	ms := make([]member, n)
	for i := range ms {
		f := idForms[g.R.IntN(len(idForms))]
		if i > 0 && g.R.IntN(4) == 0 { // reuse an earlier member's value
			f = idForms[g.R.IntN(len(idForms))]
		}
		ms[i].key = f[0]
		ms[i].id = f[g.R.IntN(len(f))]
	}
	for i := range ms {
		if g.R.IntN(3) == 0 {
			continue
		}
		var texts []string
		for range 1 + g.R.IntN(3) {
			if g.R.IntN(8) == 0 {
				texts = append(texts, missingRefs[g.R.IntN(len(missingRefs))])
				ms[i].refs = append(ms[i].refs, "missing")
				continue
			}
			j := g.R.IntN(n)
			for _, f := range idForms {
				if f[0] == ms[j].key {
					texts = append(texts, f[g.R.IntN(len(f))])
				}
			}
			ms[i].refs = append(ms[i].refs, ms[j].key)
		}
		ms[i].deps = "[" + strings.Join(texts, ",") + "]"
	}
	return ms
}

// expect is the model of a batch's outcome: -32602 for a member naming a missing or
// ambiguous id or on a cycle; -32025 for one that depends, directly or not, on a failed
// member; success for the rest. onCycle marks members on a cycle.
func expect(ms []member) (codes []schemas.Code, onCycle []bool) {
	n := len(ms)
	index := map[string]int{}
	for i, m := range ms {
		if _, dup := index[m.key]; dup {
			index[m.key] = -1
		} else {
			index[m.key] = i
		}
	}
	codes = make([]schemas.Code, n)
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
	}
	for i, m := range ms {
		for _, r := range m.refs {
			if j, ok := index[r]; !ok || j < 0 || r == "missing" {
				codes[i] = schemas.CodeInvalidParams
			}
		}
		if codes[i] == 0 {
			for _, r := range m.refs {
				reach[i][index[r]] = true
			}
		}
	}
	for k := range n {
		for i := range n {
			for j := range n {
				reach[i][j] = reach[i][j] || reach[i][k] && reach[k][j]
			}
		}
	}
	onCycle = make([]bool, n)
	for i := range n {
		if codes[i] == 0 && reach[i][i] {
			onCycle[i] = true
			codes[i] = schemas.CodeInvalidParams
		}
	}
	for i := range n {
		if codes[i] != 0 {
			continue
		}
		for j := range n {
			if reach[i][j] && codes[j] != 0 {
				codes[i] = schemas.CodeDependencyFailed
			}
		}
	}
	return codes, onCycle
}

// TestBatch sends batches at and past batch.max_size, and batches with generated
// depends_on graphs whose outcome a model predicts member by member.
func TestBatch(t *testing.T) {
	e := newEnv(t)
	n := hardening.Iterations(t, 240)
	for i := range n {
		before := e.hits.Load()
		switch i % 3 {
		case 0: // size at the limit, or one over
			size := maxBatch + i/3%2
			var parts []string
			for k := range size {
				parts = append(parts, subtract(strconv.Itoa(k), ""))
			}
			status, _, body := e.post("/rpc", "["+strings.Join(parts, ",")+"]", nil)
			hits := e.hits.Load() - before
			class := "batch/size-" + strconv.Itoa(size-maxBatch)
			if size > maxBatch {
				r, err := parseReply([]byte(body))
				if err != nil || status != http.StatusOK || !(want{schemas.CodeInvalidRequest, "max_batch_size"}).matches(r) || hits != 0 {
					t.Errorf("%s: HTTP %d %.300s (%v), %d hits", class, status, body, err, hits)
				}
				e.count(class, r.outcome())
				break
			}
			rs := e.batchReplies(class, status, body, size)
			for _, r := range rs {
				if r.Error != nil {
					t.Errorf("%s: %s", class, body)
				}
			}
			if hits != int64(size) {
				t.Errorf("%s: %d hits for %d members", class, hits, size)
			}
			e.count(class, "ok")
		default: // a generated depends_on graph
			ms := genBatch(e.gen, 1+e.gen.R.IntN(maxBatch))
			var parts []string
			for _, m := range ms {
				extra := ""
				if m.deps != "" {
					extra = `,"depends_on":` + m.deps
				}
				parts = append(parts, subtract(m.id, extra))
			}
			batch := "[" + strings.Join(parts, ",") + "]"
			status, _, body := e.post("/rpc", batch, nil)
			rs := e.batchReplies("batch/depends_on", status, body, len(ms))
			if rs == nil {
				break
			}
			codes, onCycle := expect(ms)
			served := int64(0)
			for k, r := range rs {
				got := schemas.Code(0)
				if r.Error != nil {
					got = r.Error.Code
				} else {
					served++
				}
				class := "batch/depends_on/" + memberClass(codes[k], onCycle[k])
				if got != codes[k] || !sameID(ms[k].id, r.ID) {
					t.Errorf("%s: member %d (id %s, answered as %s) got %d, want %d\nbatch %s\nanswer %s", class, k, ms[k].id, r.ID, got, codes[k], batch, body)
				}
				e.count(class, r.outcome())
			}
			if hits := e.hits.Load() - before; hits != served {
				t.Errorf("batch: %d members served, %d backend hits\n%s", served, hits, batch)
			}
		}
		if e.tooMany() {
			break
		}
	}
	e.finish()
}

func memberClass(c schemas.Code, cycle bool) string {
	switch {
	case cycle:
		return "on-cycle"
	case c == schemas.CodeInvalidParams:
		return "bad-reference"
	case c == schemas.CodeDependencyFailed:
		return "after-failed"
	}
	return "runnable"
}

// batchReplies checks that body is an array of n well-formed responses and returns them.
func (e *env) batchReplies(class string, status int, body string, n int) []reply {
	e.t.Helper()
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(body), &raws); err != nil || status != http.StatusOK || len(raws) != n {
		e.t.Errorf("%s: HTTP %d, %d answers for %d members (%v): %.500s", class, status, len(raws), n, err, body)
		return nil
	}
	rs := make([]reply, n)
	for i, raw := range raws {
		r, err := parseReply(raw)
		if err != nil {
			e.t.Errorf("%s: member %d: %v: %s", class, i, err, raw)
			return nil
		}
		rs[i] = r
	}
	return rs
}
