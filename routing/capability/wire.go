package capability

import (
	"strconv"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// appendResult writes a discover result: {"agent","v","caps","next_cursor"?}, with the
// entries of level, or the compact shape.
func (s *snapshot) appendResult(dst []byte, agent string, level int, shape Shape, page []*entry, next string) []byte {
	dst = append(dst, `{"agent":`...)
	dst = jsonrpc.AppendString(dst, agent)
	dst = append(dst, `,"v":`...)
	dst = jsonrpc.AppendString(dst, s.version)
	if shape == ShapeCompact {
		dst = appendCompactCaps(dst, page)
	} else {
		dst = append(dst, `,"caps":[`...)
		for i, e := range page {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.appendEntry(dst, level)
		}
		dst = append(dst, ']')
	}
	if next != "" {
		dst = append(dst, `,"next_cursor":`...)
		dst = jsonrpc.AppendString(dst, next)
	}
	return append(dst, '}')
}

// appendEntry writes one entry at a level: {id, cat, h}; then desc and cost; then input,
// output and examples.
func (e *entry) appendEntry(dst []byte, level int) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonrpc.AppendString(dst, e.ID)
	dst = append(dst, `,"cat":`...)
	dst = jsonrpc.AppendString(dst, e.Category)
	dst = append(dst, `,"h":`...)
	dst = jsonrpc.AppendString(dst, e.Hash)
	if level >= nekte.LevelSummary {
		dst = append(dst, `,"desc":`...)
		dst = jsonrpc.AppendString(dst, e.desc)
		dst = appendCost(dst, e.cost.hint())
	}
	if level >= nekte.LevelSchema {
		dst = append(dst, `,"input":`...)
		dst = append(dst, e.Input...)
		dst = append(dst, `,"output":`...)
		dst = append(dst, e.Output...)
		if len(e.Examples) > 0 {
			dst = append(dst, `,"examples":[`...)
			for i, ex := range e.Examples {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"in":`...)
				dst = append(dst, ex.In...)
				dst = append(dst, `,"out":`...)
				dst = append(dst, ex.Out...)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
	}
	return append(dst, '}')
}

// appendCost writes ,"cost":{…} with the known averages, or nothing.
func appendCost(dst []byte, c Cost) []byte {
	if c == (Cost{}) {
		return dst
	}
	dst = append(dst, `,"cost":{`...)
	if c.AvgMs != 0 {
		dst = append(dst, `"avg_ms":`...)
		dst = strconv.AppendInt(dst, int64(c.AvgMs), 10)
		if c.AvgTokens != 0 {
			dst = append(dst, ',')
		}
	}
	if c.AvgTokens != 0 {
		dst = append(dst, `"avg_tokens":`...)
		dst = strconv.AppendInt(dst, int64(c.AvgTokens), 10)
	}
	return append(dst, '}')
}

// appendCompactCaps writes ,"shape":"compact","caps":{"<cat>":["<id>",…],…}, categories in
// the order they first occur in page.
func appendCompactCaps(dst []byte, page []*entry) []byte {
	var cats []string
	byCat := map[string][]string{}
	for _, e := range page {
		if _, ok := byCat[e.Category]; !ok {
			cats = append(cats, e.Category)
		}
		byCat[e.Category] = append(byCat[e.Category], e.ID)
	}
	dst = append(dst, `,"shape":"compact","caps":{`...)
	for i, c := range cats {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonrpc.AppendString(dst, c)
		dst = append(dst, ":["...)
		for k, id := range byCat[c] {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = jsonrpc.AppendString(dst, id)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
