package adminparams

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestObject(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		members int
		problem string // "" for success
	}{
		{"none", ``, 0, ""},
		{"allowed", `{"id":"a","note":"b"}`, 2, ""},
		{"unknown member", `{"id":"a","who":"b"}`, 0, "unknown member"},
		{"not an object", `["a"]`, 0, "params must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Object([]byte(tt.params), "id", "note")
			if tt.problem == "" {
				if err != nil || len(p) != tt.members {
					t.Fatalf("got %v, %v; want %d members", p, err, tt.members)
				}
				return
			}
			e := gateway.AsError(err)
			if e.Code() != schemas.CodeInvalidParams || (e.Data()["problem"] != tt.problem && e.Message() != tt.problem) {
				t.Fatalf("got %v (%v), want INVALID_PARAMS %q", e, e.Data(), tt.problem)
			}
		})
	}
	if e := Invalid("id", "missing"); e.Data()["param"] != "id" || e.Data()["problem"] != "missing" {
		t.Fatalf("Invalid: %v", e.Data())
	}
}
