package loader

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one configuration problem at a position in a file. Unknown parts are zero: Line
// and Col are 0 when the position is not known, Path is "" for the whole document.
type Error struct {
	File string // file name as passed to Parse
	Line int    // 1-based line
	Col  int    // 1-based column
	Path string // dotted path of the value, as in "routes[2].method"
	Msg  string // what is wrong, for a person
}

// Error formats e as "file:line:col: path: msg", leaving out the parts that are unknown.
func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Col))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in a configuration, sorted by position; errors without a
// position come last. Parse and Decode return a non-empty ErrorList as their error.
type ErrorList []Error

// Error formats the list one error per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors of the list, so that errors.As finds an [Error] in it.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// sorted returns l sorted by position with exact duplicates removed, or nil when l is empty.
func (l ErrorList) sorted() ErrorList {
	if len(l) == 0 {
		return nil
	}
	slices.SortStableFunc(l, compareErrors)
	return slices.Compact(l)
}

func compareErrors(a, b Error) int {
	return cmp.Or(
		cmp.Compare(a.File, b.File),
		cmp.Compare(lineKey(a.Line), lineKey(b.Line)),
		cmp.Compare(a.Col, b.Col),
		cmp.Compare(a.Path, b.Path),
		cmp.Compare(a.Msg, b.Msg),
	)
}

// lineKey orders unknown lines (0) after every known one.
func lineKey(line int) int {
	if line <= 0 {
		return int(^uint(0) >> 1)
	}
	return line
}
