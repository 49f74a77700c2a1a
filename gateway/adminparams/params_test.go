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
	if _, err := Object([]byte(`{"who":1}`), "id"); gateway.AsError(err).Data()["param"] != "who" {
		t.Fatalf("an unknown member is not named: %v", gateway.AsError(err).Data())
	}
}

func TestOptional(t *testing.T) {
	p, _ := Object([]byte(`{"n":3,"s":"x"}`), "n", "s", "absent")
	var n int
	s := "kept"
	var absent bool
	if err := Optional(p, "n", &n, "must be an integer"); err != nil || n != 3 {
		t.Fatalf("n = %d, %v", n, err)
	}
	if err := Optional(p, "absent", &absent, "must be a boolean"); err != nil || absent {
		t.Fatalf("absent: %v, %v", absent, err)
	}
	err := Optional(p, "s", &n, "must be an integer")
	if e := gateway.AsError(err); err == nil || e.Code() != schemas.CodeInvalidParams || e.Data()["param"] != "s" || e.Data()["problem"] != "must be an integer" {
		t.Fatalf("a string for an integer: %v", err)
	}
	if err := Optional(p, "s", &s, "must be a string"); err != nil || s != "x" {
		t.Fatalf("s = %q, %v", s, err)
	}
}
