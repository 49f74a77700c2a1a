package jsonrpc

import (
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// DecodeCall checks one request a face builds from parts — a method name and raw params
// its caller sent some other way (an MCP tools/call, a gRPC Invoke, a capability's input) —
// as strictly as Decode checks the same request in an envelope {"jsonrpc": "2.0", "method":
// method, "params": params, "id": 1}, without writing that envelope: params are read for
// syntax, duplicate names, the depth and string limits, and lose their reserved members;
// the request gets id 1. Empty params are none.
//
// With input set, params are a capability's input instead: one JSON value of any type,
// checked at the depth it has as the only element of an array of params, and no member of
// it is reserved; Params is then params as given.
//
// The error is a whole-body error (syntax, a limit exceeded) or the request's own, as
// Decode would report them.
func DecodeCall(method string, params []byte, input bool, lim Limits) (Request, *DecodeError) {
	if !plainMethod(method) || (input && lim.MaxDepth == 1) {
		return decodeEnveloped(method, params, input, lim)
	}
	d := decoders.Get().(*decoder)
	d.reset(params, lim)
	req, err := d.call(method, input)
	d.release()
	decoders.Put(d)
	return req, err
}

// plainMethod reports whether method reads back unchanged from its JSON string literal
// (AppendString escapes nothing of it), so that its length is the one the decoder limits.
func plainMethod(method string) bool {
	for i := 0; i < len(method); {
		c := method[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return false
		}
		r, n := utf8.DecodeRuneInString(method[i:])
		if (r == utf8.RuneError && n == 1) || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += n
	}
	return true
}

// call decodes params (or input) as the params of a request of method, at the depth they
// have in an envelope.
func (d *decoder) call(method string, input bool) (Request, *DecodeError) {
	m := d.newDraft()
	m.method.off = len(d.text)
	d.text = append(d.text, method...)
	m.method.end = len(d.text)
	if method == "" {
		d.invalid(reasonMethod)
	}
	if len(method) > d.maxStr {
		d.exceed(LimitMaxStringBytes, d.maxStr)
	}
	m.hasID = true
	m.id = d.keep([]byte("1"))
	if len(d.buf) > 0 {
		d.ws()
		var ok bool
		start := d.pos
		switch {
		case input && d.pos == len(d.buf): // blank input: the envelope's params are []
			ok, m.hasParams = true, true
		case input:
			ok = d.value(2) // the only element of [input], the params of an envelope at depth 1
			m.params, m.hasParams = span{start, d.pos}, true
		default:
			ok = d.params(m, 1)
		}
		if d.ws(); !ok || d.pos != len(d.buf) {
			return Request{}, &DecodeError{Code: schemas.CodeParseError, Reason: reasonSyntax}
		}
	}
	if d.limit != "" {
		return Request{}, &DecodeError{Code: schemas.CodeInvalidRequest, Reason: reasonLimit, Limit: d.limit, Max: d.limitMax}
	}
	mem := d.build()[0]
	if mem.Err != nil {
		return Request{}, mem.Err
	}
	if input && len(d.buf) > 0 {
		mem.Request.Params = d.buf
	}
	return mem.Request, nil
}

// decodeEnveloped is DecodeCall for a method whose JSON string literal differs from it:
// the envelope is written and decoded, so the method reads back as Decode would read it.
func decodeEnveloped(method string, params []byte, input bool, lim Limits) (Request, *DecodeError) {
	b := AppendString([]byte(`{"jsonrpc":"2.0","method":`), method)
	switch {
	case input && len(params) > 0:
		b = append(append(append(b, `,"params":[`...), params...), ']')
	case len(params) > 0:
		b = append(append(b, `,"params":`...), params...)
	}
	payload, derr := Decode(append(b, `,"id":1}`...), lim)
	switch {
	case derr != nil:
		return Request{}, derr
	case payload.Members[0].Err != nil:
		return Request{}, payload.Members[0].Err
	}
	req := payload.Members[0].Request
	if input && len(params) > 0 {
		req.Params = params
	}
	return req, nil
}
