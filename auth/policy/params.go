package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxParamsDepth bounds the nesting of params decoded for a condition.
const MaxParamsDepth = 64

// errParams is the cause of every params decoding failure.
var errParams = errors.New("params")

// DecodeParams decodes a call's params for a condition: an object becomes a map, with
// numbers as int64 when integral and in range, float64 otherwise. It is strict, as
// anything an authorization decision reads must be: a member name that appears twice in
// one object — also as a case variant ("user" and "USER"), which case-insensitive decoders
// downstream would merge — is refused, and so is nesting deeper than MaxParamsDepth. Absent
// or null params, and positional (array) params, which have no names, give an empty map.
func DecodeParams(raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the value", errParams)
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case []any:
		return map[string]any{}, nil
	default:
		return nil, fmt.Errorf("%w: neither an object nor an array", errParams)
	}
}

// decodeValue reads one JSON value from dec.
func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errParams, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxParamsDepth {
			return nil, fmt.Errorf("%w: nested deeper than %d", errParams, MaxParamsDepth)
		}
		if t == '{' {
			return decodeObject(dec, depth+1)
		}
		return decodeArray(dec, depth+1)
	case json.Number:
		return number(t), nil
	default:
		return t, nil // string, bool or nil
	}
}

func decodeObject(dec *json.Decoder, depth int) (map[string]any, error) {
	out := make(map[string]any)
	folded := make(map[string]struct{})
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errParams, err)
		}
		key, _ := tok.(string)
		fold := strings.ToLower(strings.ToUpper(key))
		if _, dup := folded[fold]; dup {
			return nil, fmt.Errorf("%w: member %q appears twice (names are compared ignoring case)", errParams, key)
		}
		folded[fold] = struct{}{}
		v, err := decodeValue(dec, depth)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, fmt.Errorf("%w: %w", errParams, err)
	}
	return out, nil
}

func decodeArray(dec *json.Decoder, depth int) ([]any, error) {
	out := []any{}
	for dec.More() {
		v, err := decodeValue(dec, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, fmt.Errorf("%w: %w", errParams, err)
	}
	return out, nil
}

// number returns n as int64 when it is an integer in range, else as float64.
func number(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return f
}

// celValue converts decoded JSON (as in gateway.Principal.Claims: json.Number, []any,
// map[string]any) into values CEL takes, numbers as by DecodeParams.
func celValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		return number(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = celValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = celValue(e)
		}
		return out
	default:
		return v
	}
}
