package nekte

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// MCP content item types.
const (
	contentText         = "text"
	contentImage        = "image"
	contentAudio        = "audio"
	contentResource     = "resource"
	contentResourceLink = "resource_link"
)

// mcpResult is the part of an MCP CallToolResult the levels look at.
type mcpResult struct {
	Content           []mcpContent    `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// mcpContent is one content item: text, image, audio, resource (embedded) or
// resource_link.
type mcpContent struct {
	Type     string       `json:"type"`
	Text     string       `json:"text"`
	Data     string       `json:"data"`
	MimeType string       `json:"mimeType"`
	URI      string       `json:"uri"`
	Name     string       `json:"name"`
	Resource *mcpResource `json:"resource"`
}

// mcpResource is an embedded resource: text or a base64 blob.
type mcpResource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob"`
}

// MCPLevels builds the three levels of an MCP CallToolResult with DefaultRules.
func MCPLevels(result json.RawMessage) (Levels, error) { return DefaultRules.MCP(result) }

// MCP builds the three levels of an MCP CallToolResult: full is the result without
// insignificant whitespace, compact and minimal follow the MCP rules of the package doc.
func (r Rules) MCP(result json.RawMessage) (Levels, error) {
	r = r.withDefaults()
	var full bytes.Buffer
	if err := json.Compact(&full, result); err != nil {
		return Levels{}, ErrInvalidJSON
	}
	var res mcpResult
	if bytes.TrimSpace(result)[0] != '{' || json.Unmarshal(result, &res) != nil {
		return Levels{}, ErrNotCallToolResult
	}
	structured := len(res.StructuredContent) > 0 && string(res.StructuredContent) != jsonNull
	var lv Levels
	lv.Full = full.Bytes()
	if structured && !res.IsError {
		n, err := r.parse(res.StructuredContent)
		if err != nil {
			return Levels{}, err
		}
		lv.Compact = r.appendCompact(nil, &n)
		lv.Minimal = r.minimalOf(&n)
	} else {
		lv.Compact = r.compactMCP(&res)
		lv.Minimal = r.minimalMCP(&res)
	}
	lv.Minimal = r.capLine(lv.Minimal)
	return lv, nil
}

// compactMCP writes the compact form of a result's content: {"text": …} when every item
// is text, else {"content": [descriptors]}; "isError": true is added to an error.
func (r *Rules) compactMCP(res *mcpResult) []byte {
	budget := r.MaxText
	allText := len(res.Content) > 0
	for i := range res.Content {
		allText = allText && res.Content[i].Type == contentText
	}
	dst := []byte{'{'}
	if allText {
		texts := make([]string, len(res.Content))
		for i := range res.Content {
			texts[i] = res.Content[i].Text
		}
		dst = append(dst, `"text":`...)
		dst = jsonrpc.AppendString(dst, takeText(strings.Join(texts, "\n"), &budget))
	} else {
		dst = append(dst, `"content":[`...)
		shown := min(len(res.Content), r.MaxItems)
		for i := range shown {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendDescriptor(dst, &res.Content[i], &budget)
		}
		if more := len(res.Content) - shown; more > 0 {
			dst = append(dst, ',')
			dst = jsonrpc.AppendString(dst, "…(+"+plural(more, "item")+")")
		}
		dst = append(dst, ']')
	}
	if res.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}')
}

// takeText truncates s to what is left of the text budget, and spends it.
func takeText(s string, budget *int) string {
	t := truncate(s, *budget)
	*budget = max(0, *budget-utf8.RuneCountInString(s))
	return t
}

// appendDescriptor writes the compact descriptor of one content item.
func appendDescriptor(dst []byte, c *mcpContent, budget *int) []byte {
	w := objectWriter{dst: dst}
	w.str("type", c.Type)
	switch c.Type {
	case contentText:
		w.str("text", takeText(c.Text, budget))
	case contentImage, contentAudio:
		w.str("mimeType", c.MimeType)
		w.num("bytes", decodedLen(c.Data))
	case contentResource:
		if c.Resource != nil {
			w.str("uri", c.Resource.URI)
			w.str("mimeType", c.Resource.MimeType)
			if c.Resource.Blob != "" {
				w.num("bytes", decodedLen(c.Resource.Blob))
			} else {
				w.str("text", takeText(c.Resource.Text, budget))
			}
		}
	case contentResourceLink:
		w.str("uri", c.URI)
		w.str("name", c.Name)
		w.str("mimeType", c.MimeType)
	}
	return w.close()
}

// minimalMCP returns the minimal line of a result's content, before capping.
func (r *Rules) minimalMCP(res *mcpResult) string {
	text := firstText(res.Content)
	switch {
	case res.IsError && text != "":
		return "error: " + text
	case res.IsError:
		return "error"
	case text != "":
		return text
	case len(res.Content) == 0:
		return "no content"
	}
	parts := make([]string, 0, min(len(res.Content), r.MaxItems))
	for i := range cap(parts) {
		parts = append(parts, describe(&res.Content[i]))
	}
	line := joinMore(parts, len(res.Content))
	if len(res.Content) > 1 {
		line = plural(len(res.Content), "item") + ": " + line
	}
	return line
}

// firstText returns the first non-blank text item's text.
func firstText(content []mcpContent) string {
	for i := range content {
		if content[i].Type == contentText && strings.TrimSpace(content[i].Text) != "" {
			return content[i].Text
		}
	}
	return ""
}

// describe is how a non-text item appears in a minimal line.
func describe(c *mcpContent) string {
	switch c.Type {
	case contentImage, contentAudio:
		return c.Type + " (" + c.MimeType + ", " + plural(decodedLen(c.Data), "byte") + ")"
	case contentResource:
		if c.Resource != nil {
			return "resource " + c.Resource.URI
		}
		return "resource"
	case contentResourceLink:
		return "resource link " + c.URI
	case "":
		return "item of no type"
	default:
		return c.Type
	}
}

// decodedLen returns how many bytes base64 text s decodes to.
func decodedLen(s string) int {
	return base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(s, "=")))
}

// objectWriter writes a JSON object member by member, leaving out empty strings.
type objectWriter struct {
	dst []byte
	n   int
}

func (w *objectWriter) key(k string) {
	if w.n == 0 {
		w.dst = append(w.dst, '{')
	} else {
		w.dst = append(w.dst, ',')
	}
	w.n++
	w.dst = jsonrpc.AppendString(w.dst, k)
	w.dst = append(w.dst, ':')
}

func (w *objectWriter) str(k, v string) {
	if v == "" {
		return
	}
	w.key(k)
	w.dst = jsonrpc.AppendString(w.dst, v)
}

func (w *objectWriter) num(k string, v int) {
	w.key(k)
	w.dst = strconv.AppendInt(w.dst, int64(v), 10)
}

func (w *objectWriter) close() []byte {
	if w.n == 0 {
		return append(w.dst, "{}"...)
	}
	return append(w.dst, '}')
}
