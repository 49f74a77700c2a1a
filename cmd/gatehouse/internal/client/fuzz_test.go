package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// FuzzParseBatch: whatever a batch file holds, ParseBatch either refuses it as a usage
// error or returns JSON-RPC request objects, each with "jsonrpc": "2.0" and a method, and
// counts the members with an id.
func FuzzParseBatch(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.AddString(f, fuzzseed.JSONRPCRequest, fuzzseed.NEKTERequest)
	f.Add("{\"method\":\"a\"}\n# c\n{\"method\":\"b\",\"id\":\"x\"}\n")
	f.Add(`[{"method":"a","notification":true},{"method":"b","params":[1]}]`)
	f.Add(`[1,2]`)
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		ms, withID, err := ParseBatch([]byte(in))
		if err != nil {
			if ExitCode(err) != ExitUsage {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		ids := 0
		for _, m := range ms {
			var obj map[string]json.RawMessage
			if json.Unmarshal(m, &obj) != nil || string(obj["jsonrpc"]) != `"2.0"` || obj["method"] == nil {
				t.Fatalf("member %s", m)
			}
			if _, ok := obj["id"]; ok {
				ids++
			}
		}
		if ids != withID {
			t.Fatalf("%d members with an id, ParseBatch said %d", ids, withID)
		}
	})
}

// FuzzReadEvents: ReadEvents never panics, and every event it hands on has a name.
func FuzzReadEvents(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	fuzzseed.AddString(f, fuzzseed.SSE)
	f.Add("event: progress\ndata: {\"processed\":1}\n\n: ping\n\ndata: x\ndata: y\n\n")
	f.Add("event:\n\nevent: a\n")
	f.Fuzz(func(t *testing.T, in string) {
		_ = ReadEvents(strings.NewReader(in), func(e Event) error {
			if e.Name == "" && len(e.Data) == 0 {
				t.Fatalf("an empty event from %q", in)
			}
			return nil
		})
	})
}
