package blob_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

func testToken() blob.Token {
	return blob.Token{Task: "job-1/1", Agent: "gpu-7", Expires: t0.Add(30 * time.Second),
		Scopes: []blob.Scope{
			{Method: http.MethodGet, Key: "in/a", Offset: 4, Length: 5},
			{Method: http.MethodGet, Key: "in/a", Offset: 20, Length: 2},
			{Method: http.MethodPut, Key: "out/b", Length: 100},
		}}
}

func TestTokenRoundTrip(t *testing.T) {
	now := t0
	s := newSigner(t, &now)
	want := testToken()
	tok, err := s.SignToken(want)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, blob.TokenPrefix) {
		t.Fatalf("token %q does not start with %q", tok, blob.TokenPrefix)
	}
	got, err := s.VerifyToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task != want.Task || got.Agent != want.Agent || !got.Expires.Equal(want.Expires) || len(got.Scopes) != len(want.Scopes) {
		t.Fatalf("VerifyToken = %+v; want %+v", got, want)
	}
	for i := range want.Scopes {
		if got.Scopes[i] != want.Scopes[i] {
			t.Errorf("scope %d = %+v; want %+v", i, got.Scopes[i], want.Scopes[i])
		}
	}
	tests := []struct {
		method, key string
		want        []int64 // the offsets of the grants, in order
	}{
		{http.MethodGet, "in/a", []int64{4, 20}},
		{http.MethodPut, "out/b", []int64{0}},
		{http.MethodPut, "in/a", nil},
		{http.MethodGet, "out/b", nil},
		{http.MethodGet, "in/other", nil},
	}
	for _, tt := range tests {
		gs := got.Grants(tt.method, tt.key)
		if len(gs) != len(tt.want) {
			t.Errorf("Grants(%s %s) = %+v; want offsets %v", tt.method, tt.key, gs, tt.want)
			continue
		}
		for i, g := range gs {
			if g.Offset != tt.want[i] || g.Task != want.Task || g.Agent != want.Agent || g.Method != tt.method || g.Key != tt.key {
				t.Errorf("Grants(%s %s)[%d] = %+v", tt.method, tt.key, i, g)
			}
		}
	}
}

func TestTokenExpiry(t *testing.T) {
	now := t0
	s := newSigner(t, &now)
	tok, err := s.SignToken(testToken())
	if err != nil {
		t.Fatal(err)
	}
	exp := testToken().Expires
	tests := []struct {
		at      time.Time
		wantErr error
	}{
		{exp.Add(-time.Millisecond), nil},
		{exp, blob.ErrExpired},
		{exp.Add(time.Hour), blob.ErrExpired},
	}
	for _, tt := range tests {
		now = tt.at
		if _, err := s.VerifyToken(tok); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("at expiry%+v: VerifyToken = %v; want %v", tt.at.Sub(exp), err, tt.wantErr)
		}
	}
}

// TestTokenTamper: any change of the payload or the MAC, another key, or a URL signature
// presented as a token is refused.
func TestTokenTamper(t *testing.T) {
	now := t0
	s := newSigner(t, &now)
	tok, err := s.SignToken(testToken())
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(tok, blob.TokenPrefix)
	p64, m64, _ := strings.Cut(body, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p64)
	for i := range payload {
		changed := bytes.Clone(payload)
		changed[i] ^= 0x01
		forged := blob.TokenPrefix + base64.RawURLEncoding.EncodeToString(changed) + "." + m64
		if _, err := s.VerifyToken(forged); !errors.Is(err, blob.ErrSignature) {
			t.Errorf("payload byte %d flipped: VerifyToken = %v; want ErrSignature", i, err)
		}
	}
	other, err := blob.NewSigner(bytes.Repeat([]byte("o"), blob.MinKeyBytes), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := other.SignToken(testToken())
	mac, _ := base64.RawURLEncoding.DecodeString(m64)
	mac[0] ^= 0x80
	tests := []struct {
		name, tok string
		wantErr   error
	}{
		{"another key", foreign, blob.ErrSignature},
		{"MAC changed", blob.TokenPrefix + p64 + "." + base64.RawURLEncoding.EncodeToString(mac), blob.ErrSignature},
		{"MAC cut", tok[:len(tok)-2], blob.ErrTokenMalformed},
		{"no MAC", blob.TokenPrefix + p64, blob.ErrTokenMalformed},
		{"no prefix", body, blob.ErrTokenMalformed},
		{"padded", tok + "=", blob.ErrTokenMalformed},
		{"a URL signature", s.Sign(testGrant()), blob.ErrTokenMalformed},
		{"empty", "", blob.ErrTokenMalformed},
		{"huge", blob.TokenPrefix + strings.Repeat("A", blob.MaxTokenBytes), blob.ErrTokenMalformed},
	}
	for _, tt := range tests {
		if _, err := s.VerifyToken(tt.tok); !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: VerifyToken = %v; want %v", tt.name, err, tt.wantErr)
		}
	}
}

func TestSignTokenRefuses(t *testing.T) {
	now := t0
	s := newSigner(t, &now)
	many := make([]blob.Scope, blob.MaxTokenScopes+1)
	for i := range many {
		many[i] = blob.Scope{Method: http.MethodGet, Key: "in/a", Length: 1}
	}
	tests := []struct {
		name string
		edit func(*blob.Token)
	}{
		{"no scopes", func(tk *blob.Token) { tk.Scopes = nil }},
		{"too many scopes", func(tk *blob.Token) { tk.Scopes = many }},
		{"no task", func(tk *blob.Token) { tk.Task = "" }},
		{"control in agent", func(tk *blob.Token) { tk.Agent = "a\nb" }},
		{"bad key", func(tk *blob.Token) { tk.Scopes[0].Key = "../etc" }},
		{"DELETE", func(tk *blob.Token) { tk.Scopes[0].Method = http.MethodDelete }},
		{"negative length", func(tk *blob.Token) { tk.Scopes[0].Length = -1 }},
		{"upload at an offset", func(tk *blob.Token) { tk.Scopes[2].Offset = 1 }},
	}
	for _, tt := range tests {
		tk := testToken()
		tk.Scopes = append([]blob.Scope(nil), tk.Scopes...)
		tt.edit(&tk)
		if tok, err := s.SignToken(tk); err == nil {
			t.Errorf("%s: SignToken = %q; want an error", tt.name, tok)
		}
	}
}

func TestRefsScope(t *testing.T) {
	now := t0
	r, s, st := newRefs(t, &now)
	if _, err := st.Create(t.Context(), "in/data", strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	sc, err := r.Scope(t.Context(), "job/1", "gpu-7", []blob.Read{
		{Ref: "blob:in/data", Length: -1}, {Ref: "blob:in/data", Offset: 2, Length: 3}, {Ref: "blob:in/data", Offset: 7, Length: -1},
	}, 50, 10*time.Second+500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range append(append([]string(nil), sc.Reads...), sc.UploadURL) {
		p, err := url.Parse(u)
		if err != nil || p.RawQuery != "" || !strings.HasPrefix(u, "https://gw.example:8443/edge/blobs/") {
			t.Errorf("URL %q: want a plain URL of the endpoint", u)
		}
	}
	if sc.Reads[0] != "https://gw.example:8443/edge/blobs/in/data" {
		t.Errorf("read URL = %q", sc.Reads[0])
	}
	if want := t0.Add(10*time.Second + 500*time.Millisecond); !sc.Expires.Equal(want) {
		t.Errorf("Expires = %v; want the task's timeout, %v", sc.Expires, want)
	}
	tok, err := s.VerifyToken(sc.Token)
	if err != nil {
		t.Fatal(err)
	}
	upKey, err := blob.ParseRef(sc.UploadRef)
	if err != nil || !strings.HasSuffix(sc.UploadURL, "/blobs/"+upKey) {
		t.Fatalf("upload %q, ref %q (%v)", sc.UploadURL, sc.UploadRef, err)
	}
	want := []blob.Scope{
		{Method: http.MethodGet, Key: "in/data", Offset: 0, Length: 10},
		{Method: http.MethodGet, Key: "in/data", Offset: 2, Length: 3},
		{Method: http.MethodGet, Key: "in/data", Offset: 7, Length: 3},
		{Method: http.MethodPut, Key: upKey, Length: 50},
	}
	if tok.Task != "job/1" || tok.Agent != "gpu-7" || len(tok.Scopes) != len(want) {
		t.Fatalf("token = %+v; want scopes %+v", tok, want)
	}
	for i := range want {
		if tok.Scopes[i] != want[i] {
			t.Errorf("scope %d = %+v; want %+v", i, tok.Scopes[i], want[i])
		}
	}
	// The TTL caps a longer timeout; the store's limit caps the upload.
	sc, err = r.Scope(t.Context(), "job/1", "gpu-7", nil, 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ = s.VerifyToken(sc.Token)
	if !sc.Expires.Equal(t0.Add(time.Minute)) || len(tok.Scopes) != 1 || tok.Scopes[0].Length != 100 {
		t.Errorf("Scope without reads = %+v, token %+v; want the TTL and the store's limit", sc, tok)
	}
	for _, tt := range []struct {
		name    string
		read    blob.Read
		wantErr error
	}{
		{"not a ref", blob.Read{Ref: "in/data", Length: -1}, blob.ErrInvalidRef},
		{"missing", blob.Read{Ref: "blob:in/none", Length: -1}, blob.ErrNotFound},
		{"past the end", blob.Read{Ref: "blob:in/data", Offset: 5, Length: 6}, blob.ErrRange},
	} {
		if _, err := r.Scope(t.Context(), "job/1", "gpu-7", []blob.Read{tt.read}, 0, 0); !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: Scope = %v; want %v", tt.name, err, tt.wantErr)
		}
	}
}
