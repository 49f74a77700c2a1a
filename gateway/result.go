package gateway

// Result is the successful outcome of a call.
type Result struct {
	// Value is the raw JSON of the JSON-RPC result member; nil encodes as null.
	Value []byte
}

// NewResult returns a Result holding the raw JSON value v.
func NewResult(v []byte) *Result { return &Result{Value: v} }
