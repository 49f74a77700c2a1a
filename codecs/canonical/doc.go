// Package canonical writes JSON in the canonical form NEKTE's capability version hash is
// computed over: what JavaScript's JSON.stringify writes for a value whose objects have
// their keys sorted, recursively. A JavaScript implementation that sorts keys and calls
// JSON.stringify reproduces the same bytes, so hashes of them agree across languages.
//
// The rules, applied by CanonicalJSON:
//
//   - no insignificant whitespace;
//   - object members sorted by key in UTF-16 code unit order (JavaScript's default sort);
//     of duplicate keys the last one wins, as in JSON.parse;
//   - array order kept;
//   - strings escaped as JSON.stringify does: \" \\ \b \f \n \r \t, other control
//     characters as \u00xx (lowercase hex), lone surrogates as \udxxx, everything else
//     (including '<', '>', '&', U+2028, U+2029 and any non-ASCII) written raw in UTF-8;
//   - numbers parsed as IEEE-754 doubles and written as ECMAScript's Number::toString
//     does: 1.0 → 1, 1e2 → 100, 1e21 → 1e+21, 1e-7 → 1e-7, 0.000001 → 0.000001, -0 → 0;
//     a number outside the double range (1e400) becomes null, as JSON.parse makes it
//     Infinity and JSON.stringify writes that as null.
//
// Invalid JSON and invalid UTF-8 outside strings are errors (*SyntaxError); invalid UTF-8
// inside a string is read as U+FFFD, as a JavaScript text decoder would. Nesting deeper
// than MaxDepth is ErrTooDeep.
//
// It imports nothing of Gatehouse: a leaf below every layer that writes canonical JSON.
package canonical
