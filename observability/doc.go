// Package observability gives every call a trace id and the gateway a structured logger.
// Tracing export and metrics land here too; their third-party types stay in this package.
package observability
