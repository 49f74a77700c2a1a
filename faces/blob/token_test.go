package blobface_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	blobface "github.com/gatehouse-dev/gatehouse/faces/blob"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// TestTaskToken: a trusted agent's task token reads the ranges it grants through plain URLs
// and writes its one output, and is refused for another key, range or method, after its
// expiry, with a signed query, and when tampered with or foreign.
func TestTaskToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	ref := e.upload(t, data)
	other := e.upload(t, []byte("other bytes"))
	otherKey, _ := blob.ParseRef(other)
	sc, err := e.refs.Scope(t.Context(), "job/1", "gpu-7", []blob.Read{
		{Ref: ref, Offset: 10, Length: 10}, {Ref: ref, Offset: 30, Length: -1},
	}, 12, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	auth := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	read := sc.Reads[0]

	reads := []struct {
		name, rangeHeader string
		wantStatus        int
		want              string
	}{
		{"no Range: the first grant", "", http.StatusPartialContent, "abcdefghij"},
		{"inside the first", "bytes=12-15", http.StatusPartialContent, "cdef"},
		{"the second grant", "bytes=30-35", http.StatusPartialContent, "uvwxyz"},
		{"suffix: the second", "bytes=-3", http.StatusPartialContent, "xyz"},
		{"between the grants", "bytes=20-29", http.StatusRequestedRangeNotSatisfiable, ""},
		{"across both", "bytes=10-35", http.StatusRequestedRangeNotSatisfiable, ""},
		{"before", "bytes=0-3", http.StatusRequestedRangeNotSatisfiable, ""},
	}
	for _, tt := range reads {
		h := auth(sc.Token)
		if tt.rangeHeader != "" {
			h = append(h, "Range", tt.rangeHeader)
		}
		r := do(t, http.MethodGet, read, nil, h...)
		if r.status != tt.wantStatus || (tt.want != "" && string(r.body) != tt.want) {
			t.Errorf("GET %s: %d %q; want %d %q", tt.name, r.status, r.body, tt.wantStatus, tt.want)
		}
		if tt.wantStatus == http.StatusRequestedRangeNotSatisfiable && r.data["reason"] != "range_not_satisfiable" {
			t.Errorf("GET %s: %s; want range_not_satisfiable", tt.name, r.body)
		}
	}

	// The upload: more than granted is refused, the grant is written once.
	if r := do(t, http.MethodPut, sc.UploadURL, bytes.NewReader(bytes.Repeat([]byte("x"), 13)), auth(sc.Token)...); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("PUT over the grant: %d %s; want 413", r.status, r.body)
	}
	out := []byte("the result")
	r := do(t, http.MethodPut, sc.UploadURL, bytes.NewReader(out), auth(sc.Token)...)
	var c blobface.Created
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &c) != nil || c.Ref != sc.UploadRef || c.SHA256 != sum(out) {
		t.Fatalf("PUT with the token: %d %s; want 201 naming %s", r.status, r.body, sc.UploadRef)
	}
	if r := do(t, http.MethodPut, sc.UploadURL, strings.NewReader("again"), auth(sc.Token)...); r.status != http.StatusConflict {
		t.Errorf("second PUT: %d %s; want 409", r.status, r.body)
	}

	// Nothing the token does not grant.
	upKey, _ := blob.ParseRef(sc.UploadRef)
	inKey, _ := blob.ParseRef(ref)
	base := e.srv.URL + blob.EndpointPath
	notGranted := []struct{ name, method, url string }{
		{"another key", http.MethodGet, base + otherKey},
		{"a key it may not know", http.MethodGet, base + "in/0000"},
		{"reading its upload", http.MethodGet, base + upKey},
		{"writing an input", http.MethodPut, base + inKey},
		{"writing another key", http.MethodPut, base + "out/ffff"},
	}
	for _, tt := range notGranted {
		r := do(t, tt.method, tt.url, strings.NewReader("12345"), auth(sc.Token)...)
		if r.status != http.StatusForbidden || r.code != schemas.CodeAuthorization || r.data["reason"] != "not_granted" {
			t.Errorf("%s: %d %s; want 403 not_granted", tt.name, r.status, r.body)
		}
	}

	foreignSigner, err := blob.NewSigner(bytes.Repeat([]byte("f"), blob.MinKeyBytes), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := e.signer.VerifyToken(sc.Token)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := foreignSigner.SignToken(tk)
	tampered := sc.Token[:len(blob.TokenPrefix)+4] + flip(sc.Token[len(blob.TokenPrefix)+4]) + sc.Token[len(blob.TokenPrefix)+5:]
	refused := []struct {
		name, url, token, reason string
		status                   int
	}{
		{"tampered", read, tampered, "bad_signature", http.StatusUnauthorized},
		{"another key's token", read, foreign, "bad_signature", http.StatusUnauthorized},
		{"malformed", read, blob.TokenPrefix + "not-a-token", "malformed_token", http.StatusUnauthorized},
		{"with a signed query", read + "?task=x", sc.Token, "token_and_query", http.StatusBadRequest},
	}
	for _, tt := range refused {
		r := do(t, http.MethodGet, tt.url, nil, auth(tt.token)...)
		if r.status != tt.status || r.data["reason"] != tt.reason {
			t.Errorf("%s: %d %s; want %d %s", tt.name, r.status, r.body, tt.status, tt.reason)
		}
	}
	// A caller's credential still reads as a caller.
	if r := do(t, http.MethodGet, read, nil, "Authorization", "Bearer blobreader"); r.status != http.StatusOK || !bytes.Equal(r.body, data) {
		t.Errorf("a caller's read: %d %q", r.status, r.body)
	}

	e.now.Add(30) // the token lives the task's 30s
	r = do(t, http.MethodGet, read, nil, auth(sc.Token)...)
	if r.status != http.StatusUnauthorized || r.code != schemas.CodeAuthentication || r.data["reason"] != "expired" {
		t.Errorf("expired token: %d %s; want 401 expired", r.status, r.body)
	}
}

// flip changes one base64url character into another.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}
