package configs

import (
	"fmt"
	"strings"
)

// Sections returns the named top-level sections of the embedded default, verbatim and in
// the order asked, as one YAML document — for tests and tools that run with the shipped
// settings of some sections (the enforcement a user gets out of the box) and their own
// listeners and routes. A name the default does not have is an error.
func Sections(names ...string) (string, error) {
	lines := strings.SplitAfter(string(Default), "\n")
	var out strings.Builder
	for _, name := range names {
		start := -1
		for i, l := range lines {
			if strings.HasPrefix(l, name+":") {
				start = i
				break
			}
		}
		if start < 0 {
			return "", fmt.Errorf("the default configuration has no %q section", name)
		}
		out.WriteString(lines[start])
		for _, l := range lines[start+1:] {
			if l != "" && l[0] != ' ' && l[0] != '#' && l[0] != '\n' {
				break // the next top-level key
			}
			out.WriteString(l)
		}
	}
	return out.String(), nil
}
