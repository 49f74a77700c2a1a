package schemas_test

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestTableIsConsistent(t *testing.T) {
	seenCode := map[schemas.Code]bool{}
	seenName := map[string]bool{}
	for _, k := range schemas.Kinds() {
		if seenCode[k.Code] || seenName[k.Name] {
			t.Errorf("duplicate row %+v", k)
		}
		seenCode[k.Code], seenName[k.Name] = true, true
		if k.Message == "" || k.HTTP < 200 || k.HTTP > 599 || k.GRPC == codes.OK {
			t.Errorf("incomplete row %+v", k)
		}
	}
	for c := schemas.Code(-32011); c <= -32001; c++ {
		if !seenCode[c] {
			t.Errorf("NEKTE code %d missing", c)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		code  schemas.Code
		name  string
		found bool
	}{
		{-32700, "PARSE_ERROR", true},
		{-32001, "VERSION_MISMATCH", true},
		{4002, "INSUFFICIENT_SCOPE", true},
		{1234, "AGENT_EXECUTION_FAILED", true},
		{1002, "AGENT_TASK_REJECTED", true},
		{1003, "AGENT_TASK_FAILED", true},
		{1004, "AGENT_TASK_TIMEOUT", true},
		{1005, "AGENT_GONE", true},
		{1006, "NO_AGENT", true},
		{2999, "RETRIEVAL_FAILED", true},
		{3500, "MEMORY_FAILED", true},
		{4999, "AUTHORIZATION_FAILED", true},
		{5555, "QUOTA_EXCEEDED", true},
		{-32050, "INTERNAL_ERROR", true},
		{42, "", false},
		{6000, "", false},
	}
	for _, tt := range tests {
		k, ok := schemas.Lookup(tt.code)
		if ok != tt.found || k.Name != tt.name || (ok && k.Code != tt.code) {
			t.Errorf("Lookup(%d) = %+v, %v; want %s, %v", tt.code, k, ok, tt.name, tt.found)
		}
	}
	if k := schemas.KindOf(42); k.Code != 42 || k.HTTP != http.StatusInternalServerError {
		t.Errorf("KindOf(42) = %+v", k)
	}
}

func TestFromGRPCRoundTrip(t *testing.T) {
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		code := schemas.FromGRPC(c)
		if _, ok := schemas.Lookup(code); !ok {
			t.Errorf("FromGRPC(%v) = %d, not in the table", c, code)
		}
	}
	for _, c := range []codes.Code{codes.DeadlineExceeded, codes.Unauthenticated, codes.Unimplemented, codes.Unavailable, codes.Canceled} {
		if back := schemas.KindOf(schemas.FromGRPC(c)).GRPC; back != c {
			t.Errorf("%v → %d → %v, want a round trip", c, schemas.FromGRPC(c), back)
		}
	}
	if schemas.FromGRPC(codes.OK) != schemas.CodeInternal || schemas.FromGRPC(99) != schemas.CodeInternal {
		t.Error("OK and unknown gRPC codes must map to internal")
	}
}
