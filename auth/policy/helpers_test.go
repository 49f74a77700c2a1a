package policy_test

import "strings"

func lowerUpper(s string) string { return strings.ToLower(strings.ToUpper(s)) }
