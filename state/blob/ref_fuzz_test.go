package blob

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// FuzzParseRef: a DataRef is blob:KEY with a valid key, and Ref gives it back; anything else
// is ErrInvalidRef.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"blob:a/b.json", "blob:", "blob:../x", "http://x/y", "blob:a//b", "BLOB:a"} {
		f.Add(s)
	}
	// The URIs of real frames (data_refs, resources).
	for _, v := range fuzzseed.Find(f, "uri", fuzzseed.MCPRequest, fuzzseed.MCPResponse) {
		var s string
		if json.Unmarshal(v, &s) == nil {
			f.Add(s)
			f.Add("blob:" + s)
		}
	}
	f.Fuzz(func(t *testing.T, ref string) {
		key, err := ParseRef(ref)
		if err != nil {
			if !errors.Is(err, ErrInvalidRef) || key != "" {
				t.Fatalf("ParseRef(%q) = %q, %v", ref, key, err)
			}
			return
		}
		if !ValidKey(key) || Ref(key) != ref {
			t.Fatalf("ParseRef(%q) = %q: not a valid key or not the ref's", ref, key)
		}
	})
}
