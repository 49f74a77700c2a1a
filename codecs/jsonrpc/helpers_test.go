package jsonrpc_test

import (
	"slices"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// want is the expected result of one Decode.
type want struct {
	code    schemas.Code // top-level error code, 0 when the body decodes
	limit   string       // top-level DecodeError.Limit
	max     int          // top-level DecodeError.Max
	batch   bool
	members []wantMember
}

// wantMember is the expected member: a request when code is 0, else an error.
type wantMember struct {
	code     schemas.Code
	method   string
	params   string // "" for absent params
	id       string // raw id, "" for the zero ID
	deps     []string
	deadline int64
}

// req is a valid request.
func req(method, params, id string) wantMember {
	return wantMember{method: method, params: params, id: id}
}

// bad is a member error with the given code and raw id.
func bad(code schemas.Code, id string) wantMember { return wantMember{code: code, id: id} }

// single wants a body with one member.
func single(m wantMember) want { return want{members: []wantMember{m}} }

// batchOf wants a batch.
func batchOf(ms ...wantMember) want { return want{batch: true, members: ms} }

// topErr wants a top-level error.
func topErr(code schemas.Code) want { return want{code: code} }

// limitErr wants a top-level limit error.
func limitErr(limit string, maxValue int) want {
	return want{code: schemas.CodeInvalidRequest, limit: limit, max: maxValue}
}

// check decodes body and compares the result with w.
func check(t *testing.T, body string, lim jsonrpc.Limits, w want) {
	t.Helper()
	p, err := jsonrpc.Decode([]byte(body), lim)
	if w.code != 0 {
		if err == nil {
			t.Fatalf("Decode(%q) = %+v, nil; want error %d", body, p, w.code)
		}
		if err.Code != w.code || err.Limit != w.limit || err.Max != w.max || !err.ID.IsZero() {
			t.Fatalf("Decode(%q) error = %+v; want code %d limit %q max %d", body, err, w.code, w.limit, w.max)
		}
		if p.Batch || p.Members != nil {
			t.Fatalf("Decode(%q) payload = %+v with an error; want empty", body, p)
		}
		return
	}
	if err != nil {
		t.Fatalf("Decode(%q) error = %+v; want none", body, err)
	}
	if p.Batch != w.batch || len(p.Members) != len(w.members) {
		t.Fatalf("Decode(%q) = batch %v with %d members; want batch %v with %d", body, p.Batch, len(p.Members), w.batch, len(w.members))
	}
	for i, m := range p.Members {
		checkMember(t, body, i, m, w.members[i])
	}
}

// checkMember compares one decoded member with w.
func checkMember(t *testing.T, body string, i int, m jsonrpc.Member, w wantMember) {
	t.Helper()
	if w.code != 0 {
		if m.Err == nil || m.Err.Code != w.code || rawID(m.Err.ID) != w.id || m.Err.Limit != "" {
			t.Fatalf("Decode(%q) member %d = %+v, err %+v; want error %d with id %q", body, i, m.Request, m.Err, w.code, w.id)
		}
		if m.Err.Reason == "" {
			t.Fatalf("Decode(%q) member %d has an error without reason", body, i)
		}
		return
	}
	if m.Err != nil {
		t.Fatalf("Decode(%q) member %d error = %+v (%s); want request", body, i, m.Err, m.Err.Reason)
	}
	r := m.Request
	var deps []string
	for _, d := range r.DependsOn {
		deps = append(deps, d.Raw())
	}
	gotParams := string(r.Params)
	if r.Params != nil && len(r.Params) == 0 {
		gotParams = "<empty non-nil>"
	}
	if r.Method != w.method || gotParams != w.params || rawID(r.ID) != w.id ||
		!slices.Equal(deps, w.deps) || r.DeadlineMs != w.deadline {
		t.Fatalf("Decode(%q) member %d = {method %q params %q id %q deps %q deadline %d}; want {%q %q %q %q %d}",
			body, i, r.Method, gotParams, rawID(r.ID), deps, r.DeadlineMs, w.method, w.params, w.id, w.deps, w.deadline)
	}
	if r.IsNotification() != (w.id == "") {
		t.Fatalf("Decode(%q) member %d IsNotification = %v; want %v", body, i, r.IsNotification(), w.id == "")
	}
}

// rawID returns the id's raw text, "" for the zero ID.
func rawID(id jsonrpc.ID) string {
	if id.IsZero() {
		return ""
	}
	return id.Raw()
}

// aliases reports whether sub starts inside body.
func aliases(sub, body []byte) bool {
	for i := range body {
		if len(sub) > 0 && &body[i] == &sub[0] {
			return true
		}
	}
	return false
}
