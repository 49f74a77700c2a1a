package mcpbackend_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

func TestSchemaVersion(t *testing.T) {
	a, err := mcpbackend.SchemaVersion([]byte(`{"type":"object","properties":{"x":{"type":"number"}}}`), nil)
	if err != nil || len(a) != 16 {
		t.Fatalf("%q %v", a, err)
	}
	b, _ := mcpbackend.SchemaVersion([]byte(`{ "properties" : {"x":{"type":"number"}}, "type":"object" }`), nil)
	c, _ := mcpbackend.SchemaVersion([]byte(`{"type":"object","properties":{"x":{"type":"string"}}}`), nil)
	d, _ := mcpbackend.SchemaVersion([]byte(`{"type":"object","properties":{"x":{"type":"number"}}}`), []byte(`{"type":"object"}`))
	if a != b || a == c || a == d {
		t.Fatalf("versions %s %s %s %s", a, b, c, d)
	}
	if _, err := mcpbackend.SchemaVersion([]byte(`{"type":`), nil); err == nil {
		t.Fatal("a broken schema got a version")
	}
}
