package faces

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// FuzzParseEvent checks that whatever a target sends, an event that passes parseEvent can
// be written as one frame: a name on one line and a payload that is one line of JSON.
func FuzzParseEvent(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, b := range fuzzseed.Members(f, "params", fuzzseed.MCPRequest) {
		f.Add(`{"event":"progress","data":` + string(b) + `}`)
	}
	f.Add(`{"event":"progress","data":{"done":1,"total":2}}`)
	f.Add(`{"event":"complete","data":{"task_id":"t1","status":"completed"}}`)
	f.Add(`{"event":"a\nb","data":1}`)
	f.Add(`{"event":"x","data":"line\u2028sep"}`)
	f.Add(`{"event":"x"}`)
	f.Fuzz(func(t *testing.T, msg string) {
		name, data, err := ParseEvent([]byte(msg))
		if err != nil {
			return
		}
		if name == "" || strings.ContainsAny(name, "\r\n") || bytes.ContainsAny(data, "\r\n") || !json.Valid(data) {
			t.Fatalf("ParseEvent(%q) = %q, %q", msg, name, data)
		}
	})
}

func TestAppendProgress(t *testing.T) {
	total, tiny, huge := 3.0, 1e-7, 1e21
	tests := []struct {
		name string
		p    gateway.Progress
		want string
	}{
		{"progress only", gateway.Progress{Progress: 1}, `{"progress":1}`},
		{"fraction and total", gateway.Progress{Progress: 0.25, Total: &total}, `{"progress":0.25,"total":3}`},
		{"message escaped", gateway.Progress{Progress: 2, Message: "a \"b\"\n"}, `{"progress":2,"message":"a \"b\"\n"}`},
		{"exponents as encoding/json writes them", gateway.Progress{Progress: tiny, Total: &huge}, `{"progress":1e-07,"total":1e+21}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendProgress(nil, jsonrpc.NumberID(7), tt.p))
			want := `{"jsonrpc":"2.0","method":"$/progress","params":{"id":7,` + tt.want[1:] + `}`
			if got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not JSON: %s", got)
			}
		})
	}
}
