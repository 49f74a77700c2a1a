// Package loader loads Gatehouse's YAML configuration strictly and reports every problem it
// finds with its file, line and column.
//
// The package knows nothing of the gateway's sections. The server defines a root struct whose
// fields are each module's own config struct, a JSON Schema describing the same shape, and
// passes both in:
//
//	schema, err := loader.CompileSchema(schemaJSON) // once, at start-up
//	doc, err := loader.Parse("gatehouse.yaml", data, nil)
//	if err != nil {
//		return err // an ErrorList: syntax, duplicate keys, ${ENV} problems
//	}
//	var root Root
//	if err := doc.Decode(schema, &root); err != nil {
//		return err // an ErrorList: every schema violation, or the strict decode error
//	}
//	if root.Batch.Max < root.Batch.Default {
//		return doc.Errorf("batch.max", "must be at least batch.default (%d)", root.Batch.Default)
//	}
//
// Loading happens in two phases, like a compiler's. Parse reports document-level problems: a
// YAML syntax error (one, positioned), every duplicate key, every undefined ${ENV} variable,
// and the YAML features this package refuses: tags, several documents, aliases to anchors not
// defined before them, anchors defined twice, and merge keys (<<) that are not the first key
// of their mapping or do not merge exactly one mapping (goccy and YAML disagree on the rest).
// Decode then validates the document against the schema, collecting every
// violation (unknown keys through "additionalProperties": false, wrong types, enums, bounds,
// patterns, required keys), and only when there is none decodes it strictly into the Go
// struct with goccy/go-yaml. Semantic checks belong to each module and run after Decode; they
// turn a dotted path into a positioned error with [Document.Errorf].
//
// # Environment variables
//
// Scalar values (never keys or comments) may refer to environment variables:
//
//	${NAME}           the variable's value; an error if it is not set
//	${NAME:-default}  the value, or default when the variable is unset or empty
//	$$                a literal $
//
// A $ followed by anything else is kept as it is. The default is taken literally up to the
// first "}" and may not contain "${".
//
// Substitution works on the parsed document, so a value can never add keys or change the
// document's structure, whatever it contains (newlines, ": ", "{", "#", "*alias"), and every
// other line keeps its position. The result of a substitution is typed by its text, as YAML
// would type it but limited to canonical forms: `port: ${PORT}` with PORT=8080 is an integer,
// "0.5" a float, "true" and "false" booleans; everything else ("5s", "0755", "1e3", "null",
// "") is a string. Quoting the reference does not change this ("${PORT}" is the same
// integer); a block scalar (| or >) always gives a string. Where the schema wants a string and
// a substitution produced a number or boolean (a numeric password), the value is validated as
// the text it came from, and string fields of the Go struct receive that exact text; only
// fields of interface type (any) see the typed value.
//
// In flow collections ({...} and [...]) "{" and "}" are YAML syntax: quote the reference
// there, as in {password: "${PW}"}.
//
// It imports nothing of Gatehouse: the server (and cmd, deploy) decode their files with it.
package loader
