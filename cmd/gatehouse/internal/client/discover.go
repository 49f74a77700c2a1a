package client

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// DiscoverParams are nekte.discover's params for level and an optional query, category
// and top_k (0: the gateway's default).
func DiscoverParams(level int, query, category string, topK int) (json.RawMessage, error) {
	if level < 0 || level > 2 {
		return nil, Usagef("--level must be 0, 1 or 2")
	}
	p := map[string]any{"level": level}
	filter := map[string]any{}
	if query != "" {
		filter["query"] = query
	}
	if category != "" {
		filter["category"] = category
	}
	if topK > 0 {
		filter["top_k"] = topK
	}
	if len(filter) > 0 {
		p["filter"] = filter
	}
	b, _ := json.Marshal(p)
	return b, nil
}

// discovered is nekte.discover's result as the table needs it.
type discovered struct {
	Agent string `json:"agent"`
	V     string `json:"v"`
	Caps  []struct {
		ID    string `json:"id"`
		Cat   string `json:"cat"`
		H     string `json:"h"`
		Desc  string `json:"desc"`
		Input struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"input"`
	} `json:"caps"`
}

// DiscoverTable writes nekte.discover's result as a table: id, category and hash at level
// 0; the description at level 1; the input's members (required ones marked *) at level 2.
func (o *Output) DiscoverTable(raw json.RawMessage, level int) error {
	var d discovered
	if err := json.Unmarshal(raw, &d); err != nil {
		return &TransportError{Err: fmt.Errorf("nekte.discover: unexpected result: %w", err)}
	}
	header := []string{"CAPABILITY", "CATEGORY"}
	rows := make([][]string, 0, len(d.Caps))
	for _, c := range d.Caps {
		switch level {
		case 0:
			rows = append(rows, []string{c.ID, c.Cat, c.H})
		case 1:
			rows = append(rows, []string{c.ID, c.Cat, oneLine(c.Desc)})
		default:
			rows = append(rows, []string{c.ID, c.Cat, inputs(c.Input.Properties, c.Input.Required), oneLine(c.Desc)})
		}
	}
	switch level {
	case 0:
		header = append(header, "HASH")
	case 1:
		header = append(header, "DESCRIPTION")
	default:
		header = append(header, "INPUT", "DESCRIPTION")
	}
	if err := o.Table(header, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.Out, "%d capabilities of %s (catalog %s)\n", len(d.Caps), d.Agent, d.V)
	return err
}

func inputs(props map[string]json.RawMessage, required []string) string {
	if len(props) == 0 {
		return "-"
	}
	names := make([]string, 0, len(props))
	for n := range props {
		if slices.Contains(required, n) {
			n += "*"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
