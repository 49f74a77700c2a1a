// Package schemas is the leaf of Gatehouse's import graph: the error-code table shared by
// every face, the JSON Schema of the configuration file, and (later) the .proto contracts
// and their generated code. It imports nothing from the rest of the module.
package schemas
