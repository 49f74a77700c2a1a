// Package openrpctest checks OpenRPC documents against the official OpenRPC meta-schema,
// vendored under testdata with its source and licence (testdata/README.md), for the tests
// of the packages that write or serve them.
package openrpctest

import (
	"bytes"
	"embed"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed testdata/*.json
var metaSchemas embed.FS

// Meta-schema URLs: the OpenRPC document's, and the json-schema-tools one it refers to for
// the schemas inside a document.
const (
	openRPCURL     = "https://meta.open-rpc.org/"
	schemaToolsURL = "https://meta.json-schema.tools/"
)

// MetaSchema compiles the OpenRPC meta-schema.
func MetaSchema() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	// Both meta-schemas name https://meta.json-schema.tools/ as their own $schema, a
	// draft-07 dialect: they are read without it, as draft-07.
	c.DefaultDraft(jsonschema.Draft7)
	for url, file := range map[string]string{schemaToolsURL: "json-schema-tools-meta-schema.json", openRPCURL: "openrpc-meta-schema.json"} {
		v, err := readJSON(file)
		if err != nil {
			return nil, err
		}
		delete(v.(map[string]any), "$schema")
		if err := c.AddResource(url, v); err != nil {
			return nil, err
		}
	}
	// The OpenRPC meta-schema also names it without the trailing slash: the same URL
	// (RFC 3986, 6.2.3), which the library does not normalise.
	if err := c.AddResource("https://meta.json-schema.tools", map[string]any{"$ref": schemaToolsURL}); err != nil {
		return nil, err
	}
	return c.Compile(openRPCURL)
}

func readJSON(file string) (any, error) {
	raw, err := metaSchemas.ReadFile("testdata/" + file)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// Check fails t unless doc fits the OpenRPC meta-schema and every params and result
// schema of its methods compiles in place (draft 2020-12), so that references into
// components resolve.
func Check(t testing.TB, doc []byte) {
	t.Helper()
	meta, err := MetaSchema()
	if err != nil {
		t.Fatalf("compiling the OpenRPC meta-schema: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	if err := meta.Validate(inst); err != nil {
		t.Fatalf("the document does not fit the OpenRPC meta-schema: %v\n%s", err, doc)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("urn:doc", inst); err != nil {
		t.Fatal(err)
	}
	for i, m := range inst.(map[string]any)["methods"].([]any) {
		m := m.(map[string]any)
		for j := range m["params"].([]any) {
			if _, err := c.Compile(fmt.Sprintf("urn:doc#/methods/%d/params/%d/schema", i, j)); err != nil {
				t.Errorf("%s params[%d]: %v", m["name"], j, err)
			}
		}
		if _, ok := m["result"]; ok {
			if _, err := c.Compile(fmt.Sprintf("urn:doc#/methods/%d/result/schema", i)); err != nil {
				t.Errorf("%s result: %v", m["name"], err)
			}
		}
	}
}
