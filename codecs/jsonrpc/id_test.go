package jsonrpc_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

func TestIDKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b  jsonrpc.ID
		equal bool
	}{
		{raw(`1`), raw(`1.0`), true},
		{raw(`1`), raw(`1e0`), true},
		{raw(`1`), raw(`1E+0`), true},
		{raw(`1`), raw(`10e-1`), true},
		{raw(`1`), raw(`0.1e1`), true},
		{raw(`1`), raw(`0.00100e3`), true},
		{raw(`100`), raw(`1e2`), true},
		{raw(`100`), raw(`1.00e2`), true},
		{raw(`-1.5`), raw(`-15e-1`), true},
		{raw(`0`), raw(`-0`), true},
		{raw(`0`), raw(`0.000`), true},
		{raw(`0`), raw(`0e99999999999999999999999`), true},
		{raw(`1e400`), raw(`10e399`), true},
		{raw(`1e99999999999999999999`), raw(`10e99999999999999999998`), true},
		{raw(`1e-99999999999999999999`), raw(`0.1e-99999999999999999998`), true},
		{raw(`123456789012345678901234567890`), raw(`1.2345678901234567890123456789e29`), true},
		{raw(`1`), raw(`-1`), false},
		{raw(`1`), raw(`2`), false},
		{raw(`9007199254740993`), raw(`9007199254740992`), false},
		{raw(`1e21`), raw(`1000000000000000000001`), false},
		{raw(`0.1`), raw(`0.10000000000000001`), false},
		{raw(`1e400`), raw(`1e401`), false},
		{raw(`"a"`), raw(`"\u0061"`), true},
		{raw(`"é"`), raw(`"\u00e9"`), true},
		{raw(`"😀"`), raw(`"\ud83d\ude00"`), true},
		{raw(`"a/b"`), raw(`"a\/b"`), true},
		{raw(`"\ud800"`), raw(`"\ufffd"`), true},
		{raw(`"a"`), raw(`"A"`), false},
		{raw(`"1"`), raw(`1`), false},
		{raw(`"null"`), jsonrpc.NullID, false},
		{raw(`""`), jsonrpc.ID{}, false},
		{jsonrpc.NullID, raw(`null`), true},
		{jsonrpc.NullID, jsonrpc.ID{}, false},
		{jsonrpc.StringID("a\"b"), raw(`"a\u0022b"`), true},
		{jsonrpc.NumberID(-42), raw(`-4.2e1`), true},
		{jsonrpc.NumberID(7), jsonrpc.StringID("7"), false},
	}
	for _, tc := range tests {
		t.Run(tc.a.Raw()+" vs "+tc.b.Raw(), func(t *testing.T) {
			t.Parallel()
			if got := tc.a.Key() == tc.b.Key(); got != tc.equal {
				t.Errorf("Key(%s) = %q, Key(%s) = %q; equal = %v, want %v", tc.a, tc.a.Key(), tc.b, tc.b.Key(), got, tc.equal)
			}
		})
	}
}

func TestIDForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id         jsonrpc.ID
		raw        string
		zero, null bool
	}{
		{jsonrpc.ID{}, "null", true, false},
		{jsonrpc.NullID, "null", false, true},
		{jsonrpc.StringID("x"), `"x"`, false, false},
		{jsonrpc.NumberID(3), `3`, false, false},
		{raw(`"q"`), `"q"`, false, false},
	}
	for _, tc := range tests {
		if tc.id.Raw() != tc.raw || tc.id.String() != tc.raw || tc.id.IsZero() != tc.zero || tc.id.IsNull() != tc.null {
			t.Errorf("ID %#v: Raw %q String %q IsZero %v IsNull %v; want %q %v %v", tc.id, tc.id.Raw(), tc.id.String(), tc.id.IsZero(), tc.id.IsNull(), tc.raw, tc.zero, tc.null)
		}
	}
}

func TestIDKeyOfDecodedIDs(t *testing.T) {
	t.Parallel()
	body := `{"jsonrpc":"2.0","method":"m","params":{"depends_on":["\u0061",1.0]},"id":"a"}`
	p, err := jsonrpc.Decode([]byte(body), jsonrpc.Limits{})
	if err != nil || p.Members[0].Err != nil {
		t.Fatalf("Decode = %+v, %v", p, err)
	}
	r := p.Members[0].Request
	if r.DependsOn[0].Key() != r.ID.Key() || r.DependsOn[1].Key() != jsonrpc.NumberID(1).Key() {
		t.Errorf("keys %q %q, id key %q; want the first equal to the id's and the second to 1's", r.DependsOn[0].Key(), r.DependsOn[1].Key(), r.ID.Key())
	}
}

// raw is RawID of a string.
func raw(s string) jsonrpc.ID { return jsonrpc.RawID([]byte(s)) }
