package blob_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/state/blob"
)

var (
	testKey = bytes.Repeat([]byte("k"), blob.MinKeyBytes)
	t0      = time.Unix(1_800_000_000, 0)
)

func newSigner(t testing.TB, now *time.Time) *blob.Signer {
	t.Helper()
	s, err := blob.NewSigner(testKey, func() time.Time { return *now })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testGrant() blob.Grant {
	return blob.Grant{Method: http.MethodGet, Key: "jobs/j/in", Task: "task-1", Agent: "agent-a",
		Expires: t0.Add(time.Minute), Offset: 10, Length: 100}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	now := t0
	s := newSigner(t, &now)
	g := testGrant()
	got, err := s.Verify(g.Method, g.Key, s.Sign(g))
	if err != nil || got != g {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, g)
	}
}

func TestVerifyExpiry(t *testing.T) {
	now := t0
	s := newSigner(t, &now)
	g := testGrant()
	q := s.Sign(g)
	tests := []struct {
		at      time.Time
		wantErr error
	}{
		{g.Expires.Add(-time.Second), nil},
		{g.Expires.Add(-time.Nanosecond), nil},
		{g.Expires, blob.ErrExpired},
		{g.Expires.Add(time.Hour), blob.ErrExpired},
	}
	for _, tt := range tests {
		now = tt.at
		if _, err := s.Verify(g.Method, g.Key, q); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("at expiry%+v: Verify = %v; want %v", tt.at.Sub(g.Expires), err, tt.wantErr)
		}
	}
}

// TestVerifyTamper changes one field of a signed URL at a time: each change is refused.
func TestVerifyTamper(t *testing.T) {
	now := t0
	s := newSigner(t, &now)
	g := testGrant()
	signed, _ := url.ParseQuery(s.Sign(g))
	with := func(name, value string) string {
		q := url.Values{}
		for k, v := range signed {
			q[k] = append([]string(nil), v...)
		}
		q.Set(name, value)
		return q.Encode()
	}
	sig := signed.Get(blob.ParamSignature)
	flipped := string(sig[0]^1) + sig[1:]
	if flipped[0] == sig[0] || strings.ContainsAny(flipped[:1], "+/=") {
		flipped = "A" + sig[1:]
	}
	other, _ := blob.NewSigner(bytes.Repeat([]byte("o"), blob.MinKeyBytes), func() time.Time { return now })
	tests := []struct {
		name, method, key, query string
		wantErr                  error
	}{
		{"method", http.MethodPut, g.Key, s.Sign(g), blob.ErrSignature},
		{"key", g.Method, "jobs/j/other", s.Sign(g), blob.ErrSignature},
		{"task", g.Method, g.Key, with(blob.ParamTask, "task-2"), blob.ErrSignature},
		{"agent", g.Method, g.Key, with(blob.ParamAgent, "agent-b"), blob.ErrSignature},
		{"expiry", g.Method, g.Key, with(blob.ParamExpires, "1800000061"), blob.ErrSignature},
		{"offset", g.Method, g.Key, with(blob.ParamOffset, "0"), blob.ErrSignature},
		{"length", g.Method, g.Key, with(blob.ParamLength, "101"), blob.ErrSignature},
		{"signature", g.Method, g.Key, with(blob.ParamSignature, flipped), blob.ErrSignature},
		{"another key's signature", g.Method, g.Key, other.Sign(g), blob.ErrSignature},
		{"no signature", g.Method, g.Key, strings.Split(s.Sign(g), "&sig=")[0], blob.ErrUnsigned},
		{"short signature", g.Method, g.Key, with(blob.ParamSignature, sig[:20]), blob.ErrUnsigned},
		{"padded signature", g.Method, g.Key, with(blob.ParamSignature, sig+"="), blob.ErrUnsigned},
		{"leading zero", g.Method, g.Key, with(blob.ParamLength, "0100"), blob.ErrUnsigned},
		{"plus sign", g.Method, g.Key, with(blob.ParamOffset, "+10"), blob.ErrUnsigned},
		{"negative", g.Method, g.Key, with(blob.ParamOffset, "-10"), blob.ErrUnsigned},
		{"repeated", g.Method, g.Key, s.Sign(g) + "&task=task-1", blob.ErrUnsigned},
		{"unknown parameter", g.Method, g.Key, s.Sign(g) + "&x=1", blob.ErrUnsigned},
		{"empty task", g.Method, g.Key, with(blob.ParamTask, ""), blob.ErrUnsigned},
		{"control character", g.Method, g.Key, with(blob.ParamAgent, "a\nb"), blob.ErrUnsigned},
		{"bad escape", g.Method, g.Key, s.Sign(g) + "%zz", blob.ErrUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Verify(tt.method, tt.key, tt.query); !errors.Is(err, tt.wantErr) {
				t.Errorf("Verify = %v; want %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewSignerKeyLength(t *testing.T) {
	if _, err := blob.NewSigner(testKey[:blob.MinKeyBytes-1], nil); err == nil {
		t.Error("a key one byte short was accepted")
	}
	if len(blob.RandomKey()) < blob.MinKeyBytes || bytes.Equal(blob.RandomKey(), blob.RandomKey()) {
		t.Error("RandomKey: want distinct keys of MinKeyBytes")
	}
}

// FuzzVerify: the parser and verifier never panic, and accept only what the signer issued:
// a verified query re-signs to the same signature.
func FuzzVerify(f *testing.F) {
	now := t0
	s := newSigner(f, &now)
	g := testGrant()
	f.Add(g.Method, g.Key, s.Sign(g))
	f.Add(http.MethodPut, "out/x", s.Sign(blob.Grant{Method: http.MethodPut, Key: "out/x", Task: "t", Agent: "a", Expires: t0.Add(time.Hour), Length: 5}))
	f.Add("GET", "k", "task=a&agent=b&exp=1&off=0&len=0&sig=")
	f.Add("GET", "k", "task=a&task=a&%zz")
	f.Fuzz(func(t *testing.T, method, key, query string) {
		got, err := s.Verify(method, key, query)
		if err != nil {
			if !errors.Is(err, blob.ErrUnsigned) && !errors.Is(err, blob.ErrSignature) && !errors.Is(err, blob.ErrExpired) {
				t.Fatalf("Verify = %v: not one of the package's errors", err)
			}
			return
		}
		if got.Method != method || got.Key != key || !now.Before(got.Expires) {
			t.Fatalf("Verify = %+v for %s %s", got, method, key)
		}
		want, _ := url.ParseQuery(s.Sign(got))
		have, _ := url.ParseQuery(query)
		if want.Get(blob.ParamSignature) != have.Get(blob.ParamSignature) {
			t.Fatalf("accepted %q, whose signature is not the signer's", query)
		}
	})
}
