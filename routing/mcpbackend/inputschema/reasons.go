package inputschema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// limitReason describes a failure of one keyword.
func limitReason(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be of type " + strings.Join(k.Want, " or ")
	case *kind.Enum:
		return "must be one of " + jsonList(k.Want)
	case *kind.Const:
		return "must be " + jsonList([]any{k.Want})
	case *kind.Minimum:
		return "must be at least " + k.Want.RatString()
	case *kind.Maximum:
		return "must be at most " + k.Want.RatString()
	case *kind.ExclusiveMinimum:
		return "must be greater than " + k.Want.RatString()
	case *kind.ExclusiveMaximum:
		return "must be less than " + k.Want.RatString()
	case *kind.MultipleOf:
		return "must be a multiple of " + k.Want.RatString()
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d members", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d members", k.Want)
	case *kind.Pattern:
		return "must match the pattern " + strconv.Quote(k.Want)
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.UniqueItems:
		return fmt.Sprintf("items [%d] and [%d] must not be equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains, *kind.MinContains:
		return "must contain an item that matches the schema"
	case *kind.MaxContains:
		return "contains too many items that match the schema"
	case *kind.AdditionalItems:
		return "has more items than the schema allows"
	case *kind.PropertyNames:
		return "has a member name the schema does not allow"
	case *kind.FalseSchema, *kind.Not:
		return "is not allowed here"
	default:
		return "does not match the schema (" + strings.Join(k.KeywordPath(), "/") + ")"
	}
}

// jsonList writes schema values (never the input's) as JSON; clip cuts it when long.
func jsonList(vs []any) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte("?")
		}
		parts = append(parts, string(b))
	}
	return strings.Join(parts, ", ")
}

// clip cuts s to at most MaxReasonBytes bytes, on a character boundary, ending in "…".
func clip(s string) string {
	if len(s) <= MaxReasonBytes {
		return s
	}
	const mark = "…"
	cut := MaxReasonBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + mark
}
