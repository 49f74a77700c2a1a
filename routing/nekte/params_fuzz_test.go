package nekte

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// FuzzParams decodes arbitrary params into every params type this package adds: errors
// are *ParamError values, and what decodes re-encodes into params that decode again.
func FuzzParams(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, c := range fuzzseed.Calls(f, fuzzseed.NEKTERequest) {
		if c.Params != nil {
			f.Add(c.Params)
		}
	}
	for _, s := range []string{
		`{"task":{"id":"t","desc":"d","timeout_ms":5,"cap":"c","in":{"a":[1]}},"context":{"id":"x","data":{},"permissions":{"forward":false},"ttl_s":3,"scope":["c"]}}`,
		`{"action":"share","envelope":{"id":"e","data":[1],"permissions":{},"ttl_s":1,"scope":["a","b"]}}`,
		`{"task_id":"t","checks":["hash","sample"],"result_hash":"` + longHex + `"}`,
		`{"task_id":"t","Task_ID":"u"}`, `{"task":{"id":"t","cap":"c","Cap":"d"}}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, p := range []nk.Params{&delegateParams{}, &contextParams{}, &verifyParams{}, &taskRefParams{}} {
			err := nk.Decode(raw, p)
			if err != nil {
				if _, ok := errors.AsType[*nk.ParamError](err); !ok {
					t.Fatalf("%T: error %v is not a *ParamError", p, err)
				}
				continue
			}
			again, err := json.Marshal(p)
			if err != nil {
				t.Fatalf("%T: marshal: %v", p, err)
			}
			q, _ := reflect.TypeAssert[nk.Params](reflect.New(reflect.TypeOf(p).Elem()))
			if err := nk.Decode(again, q); err != nil {
				t.Fatalf("%T: %s decoded, but its encoding %s does not: %v", p, raw, again, err)
			}
		}
	})
}

const longHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
