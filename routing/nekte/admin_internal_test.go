package nekte

import (
	"slices"
	"testing"
)

func TestRecentTasksBounded(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		add       []string
		want      []string // ids kept, oldest first
		ownerOf   string
		wantOwner bool
	}{
		{name: "under the bound", max: 3, add: []string{"a", "b"}, want: []string{"a", "b"}, ownerOf: "a", wantOwner: true},
		{name: "at the bound", max: 2, add: []string{"a", "b"}, want: []string{"a", "b"}, ownerOf: "b", wantOwner: true},
		{name: "the oldest go", max: 2, add: []string{"a", "b", "c", "d"}, want: []string{"c", "d"}, ownerOf: "a"},
		{name: "unknown id", max: 2, add: []string{"a"}, want: []string{"a"}, ownerOf: "z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recentTasks{max: tt.max}
			for _, id := range tt.add {
				r.add("owner-"+id, id)
			}
			var got []string
			for _, k := range r.list() {
				got = append(got, k.id)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("kept %v, want %v", got, tt.want)
			}
			owner, ok := r.owner(tt.ownerOf)
			if ok != tt.wantOwner || (ok && owner != "owner-"+tt.ownerOf) {
				t.Errorf("owner(%q) = %q, %v", tt.ownerOf, owner, ok)
			}
		})
	}
}
