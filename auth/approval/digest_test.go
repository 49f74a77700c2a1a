package approval_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth/approval"
)

func TestDigest(t *testing.T) {
	tests := []struct {
		name   string
		a, b   string
		params [2]string
		same   bool
	}{
		{"key order and whitespace", "m", "m", [2]string{`{"a":1,"b":[1, 2]}`, `{ "b":[1,2],"a":1.0}`}, true},
		{"absent params are null", "m", "m", [2]string{``, `null`}, true},
		{"different params", "m", "m", [2]string{`[1]`, `[2]`}, false},
		{"different method", "m", "n", [2]string{`[1]`, `[1]`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := approval.Digest(tt.a, []byte(tt.params[0]))
			if err != nil {
				t.Fatal(err)
			}
			y, err := approval.Digest(tt.b, []byte(tt.params[1]))
			if err != nil {
				t.Fatal(err)
			}
			if (x == y) != tt.same || len(x) != 64 {
				t.Errorf("digests %s, %s; want same=%v", x, y, tt.same)
			}
		})
	}
}
