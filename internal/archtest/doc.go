// Package archtest holds the tests that keep Gatehouse's import graph in the shape DESIGN.md
// draws: schemas ← codecs ← gateway (core) ← state ← {auth, resilience, routing,
// observability} ← faces ← faces/* ← server ← cmd, with no face importing another.
package archtest
