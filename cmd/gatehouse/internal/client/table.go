package client

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Column is one column of a table of JSON objects: its header and the member shown.
type Column struct {
	Header string
	Member string
}

// ObjectsTable writes the array member key of raw's object (key "": raw is the array) as a
// table of cols; an empty list writes the line empty instead.
func (o *Output) ObjectsTable(raw json.RawMessage, key string, cols []Column, empty string) error {
	list := raw
	if key != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return &TransportError{Err: fmt.Errorf("unexpected result: %w", err)}
		}
		list = obj[key]
	}
	var items []map[string]json.RawMessage
	if len(list) > 0 && string(list) != jsonNull {
		if err := json.Unmarshal(list, &items); err != nil {
			return &TransportError{Err: fmt.Errorf("unexpected result: %w", err)}
		}
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(o.Out, empty)
		return err
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Header
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = cell(it[c.Member])
		}
		rows = append(rows, row)
	}
	return o.Table(header, rows)
}

// cell is a JSON value as a table cell: strings bare, absent as "-", others as JSON.
func cell(v json.RawMessage) string {
	if len(v) == 0 || string(v) == jsonNull {
		return "-"
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return "-"
		}
		if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return tm.UTC().Format(time.RFC3339) // to the second, one width for every row
		}
		return oneLine(s)
	}
	return strings.TrimSpace(compact(v))
}

// Columns pairs headers and members: Columns("ID", "id", "STATUS", "status").
func Columns(headerMember ...string) []Column {
	cols := make([]Column, 0, len(headerMember)/2)
	for i := 0; i+1 < len(headerMember); i += 2 {
		cols = append(cols, Column{Header: headerMember[i], Member: headerMember[i+1]})
	}
	return cols
}
