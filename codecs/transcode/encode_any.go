package transcode

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// This file encodes the JSON form of google.protobuf.Any, following protojson: find
// "@type" first, resolve it, then encode the rest of the object as the named type.

// anyMessage encodes the JSON form of google.protobuf.Any: an "@type" member naming the
// type, and either the type's own members or, for a well-known type, a "value" member.
func (e *encoder) anyMessage(m *message, depth int) *PathError {
	e.ws()
	if e.peek() != '{' {
		return e.want("object")
	}
	start := e.pos
	us, ue, esc, members, err := e.findType(depth)
	if err != nil {
		return err
	}
	if us < 0 {
		switch {
		case members == 0:
			return nil // {} is the empty Any
		case !e.discard:
			return fail(`missing "@type"`)
		}
		e.pos = start
		e.stack, err = e.skip(depth, e.stack)
		return err
	}
	url := string(e.keyName(us, ue, esc))
	em, rerr := e.plan.resolveAny(url)
	if rerr != nil {
		return fail(`cannot resolve the type named by "@type"`).inField([]byte(typeKey))
	}
	e.out = append(e.out, tagBytes1)
	e.out = protowire.AppendString(e.out, url)
	mark := len(e.out)
	e.out = append(e.out, tagBytes2, 0)
	e.pos = start
	e.canon++
	if em.wkt != wktNone {
		err = e.anyValue(em, depth)
	} else if depth--; depth < 0 {
		err = fail(reasonDepth)
	} else {
		err = e.object(em, depth, true)
	}
	e.canon--
	if err != nil {
		return err
	}
	if len(e.out) == mark+2 {
		e.out = e.out[:mark]
	} else {
		e.out = finishLen(e.out, mark+1)
	}
	return nil
}

// findType scans the object at e.pos for its "@type" member, checking the syntax of the
// whole object, and returns the span of the type URL (us < 0 if there is none) and the
// number of members; e.pos is left after the object.
func (e *encoder) findType(depth int) (us, ue int, esc bool, members int, err *PathError) {
	us = -1
	e.pos++
	e.ws()
	if e.eat('}') {
		return us, 0, false, 0, nil
	}
	for {
		ks, ke, kesc, err := e.name()
		if err != nil {
			return 0, 0, false, 0, err
		}
		members++
		e.ws()
		if string(e.keyName(ks, ke, kesc)) != typeKey {
			if e.stack, err = e.skip(depth, e.stack); err != nil {
				return 0, 0, false, 0, err
			}
		} else {
			if us >= 0 {
				return 0, 0, false, 0, fail(`duplicate "@type"`)
			}
			if e.peek() != '"' {
				return 0, 0, false, 0, fail(`"@type" must be a string`)
			}
			if us, ue, esc, err = e.str(); err != nil {
				return 0, 0, false, 0, err
			}
			if us == ue {
				return 0, 0, false, 0, fail(`"@type" is empty`)
			}
		}
		more, err := e.next('}')
		if err != nil {
			return 0, 0, false, 0, err
		}
		if more {
			continue
		}
		return us, ue, esc, members, nil
	}
}

// anyValue encodes the object at e.pos, an Any holding well-known type em, whose "value"
// member holds em's JSON form.
func (e *encoder) anyValue(em *message, depth int) *PathError {
	e.pos++ // findType checked the object
	found := false
	e.ws()
	if !e.eat('}') {
		for {
			ks, ke, esc, err := e.name()
			if err != nil {
				return err
			}
			switch name := e.keyName(ks, ke, esc); string(name) {
			case typeKey:
				e.ws()
				_, _, _, err = e.str()
			case "value":
				if found {
					return fail(`duplicate "value"`)
				}
				found = true
				if err = e.wellKnown(em, depth); err != nil {
					err = err.inField(name)
				}
			default:
				if err = e.unknown(depth); err != nil {
					err = err.inField(name)
				}
			}
			if err != nil {
				return err
			}
			more, err := e.next('}')
			if err != nil {
				return err
			}
			if more {
				continue
			}
			break
		}
	}
	if !found && em.wkt != wktEmpty {
		return fail(`missing "value"`)
	}
	return nil
}
