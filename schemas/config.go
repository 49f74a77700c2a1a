package schemas

import _ "embed"

// ConfigSchema is the JSON Schema (draft 2020-12) of Gatehouse's configuration file. The
// loader validates every file against it, and editors can use it for completion.
//
//go:embed config.schema.json
var ConfigSchema []byte
