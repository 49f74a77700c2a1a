package sessionrpc

import (
	"encoding/json"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// FuzzQuote checks that quote escapes as encoding/json does, and that textOf reads back
// what quote wrote.
func FuzzQuote(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, s := range fuzzseed.Strings(f, 256, fuzzseed.SessionRequest, fuzzseed.SessionResponse) {
		f.Add(s)
	}
	for _, s := range []string{"", "a\"b\\c", "<&>\n\t\x00\x1f", "\u2028\u2029", "\xff\xfe", "läst 😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got := quote(s)
		var back string
		_ = json.Unmarshal(want, &back)
		if txt := textOf(got); txt != back {
			t.Fatalf("textOf(%s) = %q, want %q", got, txt, back)
		}
	})
}
