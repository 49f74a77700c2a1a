package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
)

// ParseBatch reads a batch file: a JSON array of requests, or one request object per line
// (blank lines and lines starting with # are skipped). Each request needs a method;
// "jsonrpc": "2.0" is added when missing, and so is an id (the member's 1-based position)
// unless the member says "notification": true, which is removed and sends it without id.
// It returns the members and how many of them expect a response.
func ParseBatch(data []byte) ([]json.RawMessage, int, error) {
	var raw []json.RawMessage
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return nil, 0, Usagef("batch: not a JSON array of requests: %v", err)
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !json.Valid([]byte(line)) {
				return nil, 0, Usagef("batch: line %d is not JSON", n)
			}
			raw = append(raw, json.RawMessage(line))
		}
		if err := sc.Err(); err != nil {
			return nil, 0, Usagef("batch: %v", err)
		}
	}
	if len(raw) == 0 {
		return nil, 0, Usagef("batch: no requests")
	}
	out := make([]json.RawMessage, 0, len(raw))
	withID := 0
	for i, m := range raw {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m, &obj); err != nil || obj == nil {
			return nil, 0, Usagef("batch: member %d is not a JSON object", i+1)
		}
		var method string
		if json.Unmarshal(obj["method"], &method) != nil || method == "" {
			return nil, 0, Usagef("batch: member %d has no method", i+1)
		}
		if v, ok := obj["jsonrpc"]; ok {
			var version string
			if json.Unmarshal(v, &version) != nil || version != "2.0" {
				return nil, 0, Usagef("batch: member %d: jsonrpc must be \"2.0\" (or left out)", i+1)
			}
		}
		obj["jsonrpc"] = json.RawMessage(`"2.0"`)
		var notification bool
		if v, ok := obj["notification"]; ok {
			if json.Unmarshal(v, &notification) != nil {
				return nil, 0, Usagef("batch: member %d: notification must be true or false", i+1)
			}
			delete(obj, "notification")
		}
		switch _, has := obj["id"]; {
		case notification && has:
			return nil, 0, Usagef("batch: member %d is a notification with an id", i+1)
		case notification:
		case !has:
			obj["id"], _ = json.Marshal(i + 1)
			withID++
		default:
			withID++
		}
		b, _ := json.Marshal(obj)
		out = append(out, b)
	}
	return out, withID, nil
}

// Params reads a command's params argument: inline JSON, @file, or - (stdin, given as in).
// An empty argument is no params.
func Params(arg string, readFile func(string) ([]byte, error), stdin func() ([]byte, error)) (json.RawMessage, error) {
	var b []byte
	var err error
	switch {
	case arg == "":
		return nil, nil
	case arg == "-":
		b, err = stdin()
	case strings.HasPrefix(arg, "@"):
		b, err = readFile(arg[1:])
	default:
		b = []byte(arg)
	}
	if err != nil {
		return nil, Usagef("params: %v", err)
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, Usagef("params: not valid JSON: %s", abbreviate(string(b)))
	}
	if b[0] != '{' && b[0] != '[' {
		return nil, Usagef("params: must be a JSON object or array")
	}
	return json.RawMessage(b), nil
}

func abbreviate(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
