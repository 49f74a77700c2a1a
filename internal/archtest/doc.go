// Package archtest holds the test that keeps Gatehouse's import graph in the shape
// DESIGN.md draws: schemas ← codecs ← gateway (core) ← {auth, routing, resilience,
// observability} ← gateway/server ← cmd.
package archtest
