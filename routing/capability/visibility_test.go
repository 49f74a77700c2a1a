package capability_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// demoAndEcho shows the demo capabilities and the echo tool, and hides the other tools.
func demoAndEcho(c capability.Capability) bool { return c.Category == "demo" || c.ID == "echo" }

// nextCursor returns a discover result's next_cursor.
func nextCursor(t *testing.T, out []byte) string {
	t.Helper()
	var res struct {
		Next string `json:"next_cursor"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return res.Next
}

func TestDiscoverVisible(t *testing.T) {
	r := catalog(t, capability.Config{})
	tests := []struct {
		name   string
		filter *nekte.DiscoverFilter
		level  int
		want   string
	}{
		{"everything visible", nil, 0, "echo get_data notify_hello subtract sum update"},
		{"at level 1", nil, 1, "echo get_data notify_hello subtract sum update"},
		{"at level 2", nil, 2, "echo get_data notify_hello subtract sum update"},
		{"category of hidden tools", &nekte.DiscoverFilter{Category: "up"}, 0, "echo"},
		{"id of a hidden tool", &nekte.DiscoverFilter{ID: "read_file"}, 0, ""},
		{"id of a visible tool", &nekte.DiscoverFilter{ID: "echo"}, 0, "echo"},
		{"top_k counts visible ones", &nekte.DiscoverFilter{TopK: 2}, 0, "echo get_data"},
		{"query matching hidden tools only", &nekte.DiscoverFilter{Query: "file directory"}, 0, ""},
		{"query with top_k", &nekte.DiscoverFilter{Query: "numbers file", TopK: 2}, 0, "update notify_hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.DiscoverWith(nekte.DiscoverParams{Level: tt.level, Filter: tt.filter}, capability.DiscoverOptions{Visible: demoAndEcho})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(t, out); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("compact shape", func(t *testing.T) {
		out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Shape: capability.ShapeCompact, Visible: demoAndEcho})
		want := `{"agent":"gatehouse","v":"` + r.Version() + `","shape":"compact","caps":{"up":["echo"],` +
			`"demo":["get_data","notify_hello","subtract","sum","update"]}}`
		if err != nil || string(out) != want {
			t.Fatalf("got  %s (%v)\nwant %s", out, err, want)
		}
	})
	t.Run("a view of everything is no view", func(t *testing.T) {
		all := func(capability.Capability) bool { return true }
		for _, limit := range []int{0, 3} {
			plain, _ := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: limit})
			viewed, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: limit, Visible: all})
			if err != nil || string(viewed) != string(plain) {
				t.Fatalf("limit %d: got %s (%v), want %s", limit, viewed, err, plain)
			}
		}
	})
	t.Run("nothing visible", func(t *testing.T) {
		none := func(capability.Capability) bool { return false }
		out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: 2, Visible: none})
		if err != nil || ids(t, out) != "" || nextCursor(t, out) != "" || !strings.Contains(string(out), `"caps":[]`) {
			t.Fatalf("got %s (%v)", out, err)
		}
	})
}

func TestDiscoverVisiblePages(t *testing.T) {
	r := catalog(t, capability.Config{})
	for _, limit := range []int{1, 2, 5, 6, 10} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: limit, Cursor: cursor, Visible: demoAndEcho})
				if err != nil {
					t.Fatal(err)
				}
				if page := ids(t, out); page != "" {
					got = append(got, page)
				}
				if cursor = nextCursor(t, out); cursor == "" {
					break
				}
				if pages > 10 {
					t.Fatal("no end")
				}
			}
			if want := "echo get_data notify_hello subtract sum update"; strings.Join(got, " ") != want {
				t.Fatalf("pages %q, want %q", got, want)
			}
		})
	}
}

func TestDiscoverVisibleCursor(t *testing.T) {
	r := catalog(t, capability.Config{})
	demoOnly := func(c capability.Capability) bool { return c.Category == "demo" }
	first := func(visible func(capability.Capability) bool) string {
		out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: 2, Visible: visible})
		if err != nil {
			t.Fatal(err)
		}
		return nextCursor(t, out)
	}
	tests := []struct {
		name      string
		issuedFor func(capability.Capability) bool
		presented func(capability.Capability) bool
		wantErr   bool
	}{
		{"same view", demoAndEcho, demoAndEcho, false},
		{"same view, another func", demoAndEcho, func(c capability.Capability) bool { return demoAndEcho(c) }, false},
		{"narrower view", demoAndEcho, demoOnly, true},
		{"wider view", demoOnly, demoAndEcho, true},
		{"from everything to a view", nil, demoAndEcho, true},
		{"from a view to everything", demoAndEcho, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.DiscoverWith(nekte.DiscoverParams{}, capability.DiscoverOptions{Cursor: first(tt.issuedFor), Visible: tt.presented})
			if !tt.wantErr {
				if err != nil || ids(t, out) != "notify_hello subtract sum update" {
					t.Fatalf("got %s (%v)", out, err)
				}
				return
			}
			if codeOf(err) != schemas.CodeInvalidParams || dataOf(err)["field"] != "cursor" ||
				!strings.Contains(fmt.Sprint(dataOf(err)["reason"]), "sees other capabilities") {
				t.Fatalf("got %s, %v %v", out, err, dataOf(err))
			}
		})
	}
}

func TestCardFor(t *testing.T) {
	r := catalog(t, capability.Config{})
	tests := []struct {
		name    string
		visible func(capability.Capability) bool
		want    []string
	}{
		{"all", nil, []string{"echo", "getTinyImage", "get_data", "list_directory", "notify_hello", "read_file", "subtract", "sum", "update"}},
		{"a view", demoAndEcho, []string{"echo", "get_data", "notify_hello", "subtract", "sum", "update"}},
		{"nothing", func(capability.Capability) bool { return false }, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card := r.CardFor("http://gw/rpc", tt.visible)
			if !slices.Equal(card.Caps, tt.want) || card.Caps == nil {
				t.Fatalf("caps %q, want %q", card.Caps, tt.want)
			}
		})
	}
	if got, want := r.Card("x").Caps, r.CardFor("x", nil).Caps; !slices.Equal(got, want) {
		t.Fatalf("Card %q != CardFor(nil) %q", got, want)
	}
}
