package blob_test

import (
	"net/http"
	"testing"
)

// BenchmarkSign and BenchmarkVerify measure the cost of one signed URL on each side.
func BenchmarkSign(b *testing.B) {
	now := t0
	s := newSigner(b, &now)
	g := testGrant()
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Sign(g)
	}
}

func BenchmarkVerify(b *testing.B) {
	now := t0
	s := newSigner(b, &now)
	g := testGrant()
	q := s.Sign(g)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Verify(http.MethodGet, g.Key, q); err != nil {
			b.Fatal(err)
		}
	}
}
