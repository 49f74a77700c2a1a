package jsonnames_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonnames"
)

type inner struct {
	ID   string `json:"id"`
	Skip string `json:"-"`
}

type outer struct {
	Name  string          `json:"name"`
	Items []inner         `json:"items"`
	Child *inner          `json:"child"`
	Raw   json.RawMessage `json:"raw"`
	Plain int
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, in string
		want     *jsonnames.Problem
	}{
		{"exact names", `{"name":"a","items":[{"id":"x"}],"child":{"id":"y"},"Plain":1}`, nil},
		{"unknown members pass", `{"name":"a","extra":{"ID":1},"other":[1]}`, nil},
		{"folded top-level name", `{"Name":"a"}`, &jsonnames.Problem{Path: "name", Reason: "member name must be spelled with this exact case"}},
		{"folded name in a pointer", `{"child":{"Id":"y"}}`, &jsonnames.Problem{Path: "child.id", Reason: "member name must be spelled with this exact case"}},
		{"folded name in an array", `{"items":[{"id":"x"},{"ID":"y"}]}`, &jsonnames.Problem{Path: "items[1].id", Reason: "member name must be spelled with this exact case"}},
		{"known name twice", `{"name":"a","name":"b"}`, &jsonnames.Problem{Path: "name", Reason: "given twice"}},
		{"unknown name twice", `{"child":{"x":1,"x":2}}`, &jsonnames.Problem{Path: "child", Reason: "has a member name given twice"}},
		{"raw values are not walked", `{"raw":{"a":1,"a":2}}`, nil},
		{"json:\"-\" is no field", `{"child":{"Skip":"x"}}`, nil},
		{"field without a tag", `{"plain":1}`, &jsonnames.Problem{Path: "Plain", Reason: "member name must be spelled with this exact case"}},
		{"malformed is not ours", `{"name":`, nil},
		{"wrong type is not ours", `{"items":{"ID":1}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jsonnames.Check([]byte(tt.in), reflect.TypeFor[outer]())
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Check(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
	if got := jsonnames.Index(jsonnames.Join("a", "b"), 2); got != "a.b[2]" {
		t.Errorf("paths: %q", got)
	}
}
