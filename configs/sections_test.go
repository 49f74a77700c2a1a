package configs

import (
	"strings"
	"testing"
)

func TestSections(t *testing.T) {
	got, err := Sections("admission", "breakers")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "admission:") || !strings.Contains(got, "\nbreakers:") {
		t.Fatalf("sections in the wrong order or missing:\n%s", got)
	}
	for _, other := range []string{"\nretries:", "\nauth:", "\nserver:"} {
		if strings.Contains(got, other) {
			t.Fatalf("%q leaked into the sections:\n%s", other, got)
		}
	}
	if _, err := Sections("no_such_section"); err == nil {
		t.Fatal("a missing section is no error")
	}
}
